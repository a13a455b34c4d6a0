package store_test

import (
	"encoding/json"
	"errors"
	"html"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/store"
)

func TestParseSearch(t *testing.T) {
	w := func(prefix bool, words ...string) store.SearchTerm {
		return store.SearchTerm{Words: words, Prefix: prefix}
	}
	for _, tc := range []struct {
		q             string
		want          store.SearchTerms
		fts5, tsquery string
	}{
		{"hello", store.SearchTerms{w(false, "hello")}, `"hello"`, `('hello')`},
		{"  Hello   WORLD ", store.SearchTerms{w(false, "hello"), w(false, "world")}, `"hello" AND "world"`, `('hello') & ('world')`},
		{`"exact words" here`, store.SearchTerms{w(false, "exact", "words"), w(false, "here")}, `"exact words" AND "here"`,
			`('exact' <-> 'words') & ('here')`},
		{"quart*", store.SearchTerms{w(true, "quart")}, `"quart"*`, `('quart':*)`},
		{`"the quart"*`, store.SearchTerms{w(true, "the", "quart")}, `"the quart"*`, `('the' <-> 'quart':*)`},
		{`"the quart*"`, store.SearchTerms{w(true, "the", "quart")}, `"the quart"*`, `('the' <-> 'quart':*)`},
		{"don't", store.SearchTerms{w(false, "don", "t")}, `"don t"`, `('don' <-> 't')`},
		{`"unclosed phrase`, store.SearchTerms{w(false, "unclosed", "phrase")}, `"unclosed phrase"`, `('unclosed' <-> 'phrase')`},
		{`OR NOT -x`, store.SearchTerms{w(false, "or"), w(false, "not"), w(false, "x")}, `"or" AND "not" AND "x"`,
			`('or') & ('not') & ('x')`},
		{`Zoë 42`, store.SearchTerms{w(false, "zoë"), w(false, "42")}, `"zoë" AND "42"`, `('zoë') & ('42')`},
		{`a"b c"`, store.SearchTerms{w(false, "a"), w(false, "b", "c")}, `"a" AND "b c"`, `('a') & ('b' <-> 'c')`},
	} {
		got, err := store.ParseSearch(tc.q)
		if err != nil {
			t.Errorf("ParseSearch(%q): %v", tc.q, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSearch(%q) = %+v, want %+v", tc.q, got, tc.want)
		}
		if f := got.FTS5(); f != tc.fts5 {
			t.Errorf("ParseSearch(%q).FTS5() = %s, want %s", tc.q, f, tc.fts5)
		}
		if q := got.TSQuery(); q != tc.tsquery {
			t.Errorf("ParseSearch(%q).TSQuery() = %s, want %s", tc.q, q, tc.tsquery)
		}
	}
	for _, bad := range []string{"", "   ", `""`, "*", "-", "a*", `"x"* y*`, strings.Repeat("w ", 17), strings.Repeat("x", 600), "\xff"} {
		if _, err := store.ParseSearch(bad); !errors.Is(err, store.ErrBadQuery) {
			t.Errorf("ParseSearch(%.40q) = %v, want ErrBadQuery", bad, err)
		}
	}
}

func TestHighlight(t *testing.T) {
	for _, tc := range []struct{ q, text, want string }{
		{"hello", "Hello, hello!", "<mark>Hello</mark>, <mark>hello</mark>!"},
		{`"hello world"`, "hello big world, hello world", "hello big world, <mark>hello world</mark>"},
		{"rev*", "The revenue & <b>revision</b>", "The <mark>revenue</mark> &amp; &lt;b&gt;<mark>revision</mark>&lt;/b&gt;"},
		{`"ten percent" ten`, "ten percent, ten", "<mark>ten percent</mark>, <mark>ten</mark>"},
		{"a1 b2", "b2 a1", "<mark>b2</mark> <mark>a1</mark>"},
		{"zebra", `no "match" here`, "no &#34;match&#34; here"},
		{"don't", "I don't know", "I <mark>don&#39;t</mark> know"},
	} {
		terms, err := store.ParseSearch(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := terms.Highlight(tc.text); got != tc.want {
			t.Errorf("Highlight(%q, %q) = %q, want %q", tc.q, tc.text, got, tc.want)
		}
	}
}

// FuzzParseSearch: any query either parses into terms of words as Words reads them, with
// bounded sizes, or is ErrBadQuery; what it renders for the databases is quoted so that no
// input escapes its string; and a highlight, its marks removed and unescaped, is the text.
func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{"hello", `"exact words" prefix*`, `"a" b* "c d"*`, `don't "x`, `'; DROP TABLE x; --`,
		`"" * ** "*"`, "Zoë\u00a0naïve ٣", `\'\\"`} {
		f.Add(s, "Hello exact words, prefixes and don't Zoë")
	}
	f.Fuzz(func(t *testing.T, q, text string) {
		terms, err := store.ParseSearch(q)
		if err != nil {
			if !errors.Is(err, store.ErrBadQuery) {
				t.Fatalf("ParseSearch(%q): %v, not ErrBadQuery", q, err)
			}
			return
		}
		if len(terms) == 0 || len(terms) > store.MaxQueryTerms {
			t.Fatalf("ParseSearch(%q): %d terms", q, len(terms))
		}
		for _, term := range terms {
			for _, w := range term.Words {
				if ws := store.Words(w); len(ws) != 1 || ws[0].Word != w {
					t.Fatalf("ParseSearch(%q): term word %q is not one word", q, w)
				}
			}
		}
		// Quotes inside a word cannot occur: each FTS5 string is exactly the words.
		if strings.Count(terms.FTS5(), `"`) != 2*len(terms) {
			t.Fatalf("FTS5(%q) = %s: quotes inside a string", q, terms.FTS5())
		}
		if strings.Count(terms.TSQuery(), `'`)%2 != 0 {
			t.Fatalf("TSQuery(%q) = %s: unbalanced quotes", q, terms.TSQuery())
		}
		if !utf8.ValidString(text) {
			return
		}
		h := terms.Highlight(text)
		plain := strings.NewReplacer("<mark>", "", "</mark>", "").Replace(h)
		if strings.ContainsAny(plain, "<>") || html.UnescapeString(plain) != text {
			t.Fatalf("Highlight(%q, %q) = %q: not the text with marks", q, text, h)
		}
	})
}

// BenchmarkResultUtterances2h reads the utterances of a 2-hour result (20,000 words) as the
// pipeline does to index them: the decoding share of BenchmarkIndexResult2h.
func BenchmarkResultUtterances2h(b *testing.B) {
	payload, err := json.Marshal(apitest.Result(1, 2*time.Hour, 20000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(payload)))
	n := 0
	for b.Loop() {
		n = len(store.ResultUtterances("job", payload))
	}
	b.ReportMetric(float64(n), "utterances")
}
