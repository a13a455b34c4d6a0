package docscheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"
)

// TestDocIdentifiers checks that the Go identifiers the documentation names exist: a comment
// that names a function that was renamed, or never existed, sends its reader looking for it.
//
// What is read:
//
//   - every comment of every Go file of the module and of the modules nested in it (tests
//     included; not under testdata/, node_modules/ or hidden folders);
//   - in README.md and docs/*.md (not docs/spec/, the service's documents): the code spans
//     (`…`) and the fenced blocks marked go.
//
// Which names are checked, and against what (a "package of ours" is a package of these
// modules, main packages excepted, known by its package name; a "type of ours" is a type
// declared in one):
//
//  1. pkg.Name, pkg.Name.Member (Go comments and Markdown): pkg is the name of a package of
//     ours, Name starts with an upper-case letter and is not preceded by '.', '/' or a letter
//     (not a path, a file name or a chain of fields). Name must be declared at the top level of
//     a package of ours of that name; when Name is a type, Member must be one of its fields or
//     methods (embedded ones included). In a Go file that imports a package of another module
//     under that name (modernc.org/sqlite as sqlite), pkg is that package: not checked.
//  2. T.Member and (*T).Member: in a Go comment, T is a type of the comment's package; in
//     Markdown, T is a type of ours in any package (a Member of any of them will do). Member
//     must be a field or a method of T, embedded ones included. A T that is no type of ours is
//     not checked (a variable, a type of another module).
//  3. Doc links, in Go comments: [Name], [Name.Member], [pkg.Name], [pkg.Name.Member], with or
//     without a leading '*', where Name starts with an upper-case letter. [Name] must be
//     declared in the comment's package (its tests included); the others as in 1 and 2. A
//     bracket that a link definition of the comment names ("[Name]: https://…") is a link to
//     that address, not checked.
//  4. Bare words in Go comments written like an exported Go identifier of several words (an
//     upper-case letter, lower-case letters or digits, then another upper-case letter, as in
//     "Start and Serve"; not "JSON" nor "SQLite"): each must be a top-level name, a field or a
//     method of a package of ours; a test, benchmark, fuzz target or example of ours without its
//     prefix ("the SinkCycle benchmark"); a word of a string literal of the comment's package (a
//     header, a configuration key, an exception the code sends); an exported name, field or
//     method of a package the comment's file imports (read from its source: a file that speaks
//     of fiber.Config's StreamRequestBody imports fiber, or writes it qualified); or one of
//     nonGoWords, the names of things that are not Go.
//
// The comments of this package are not read: they show the forms.
//
// Rules 3 and 4 skip the code blocks of comments (lines indented by a tab or three spaces),
// which declare names of their own.
//
// A type's members are its struct fields, its methods and its interface's methods, and those
// of the types it embeds (followed into other packages of ours); a type that embeds a type of
// another module is taken to have every member. Build constraints are ignored: every file
// counts. The check parses sources (go/parser), and asks go list only where the imported
// packages lie.
func TestDocIdentifiers(t *testing.T) {
	needTool(t, "go")
	root := moduleRoot(t)
	idx := loadModule(t, root)
	var problems []string
	for _, f := range idx.files {
		if f.pkg.path == module+"/internal/docscheck" {
			continue // its comments show the forms
		}
		problems = append(problems, idx.checkGoFile(f)...)
	}
	for _, doc := range markdownDocs(t, root) {
		problems = append(problems, idx.checkMarkdown(t, root, doc)...)
	}
	if len(problems) > 0 {
		t.Errorf("the documentation names Go identifiers that do not exist:\n%s\n"+
			"Name what exists, or write the name as prose (forms checked: internal/docscheck/identifiers_test.go).",
			strings.Join(problems, "\n"))
	}
}

// nonGoWords are words of the documentation written like Go identifiers that name no Go
// identifier: products, protocols, formats, headers.
var nonGoWords = map[string]bool{
	"JetStream": true, "WebSocket": true, "WebSockets": true, "PostgreSQL": true, "WebVTT": true,
	"JavaScript": true, "TypeScript": true, "GitHub": true, // products and protocols
	"PrivateTmp": true,                                                     // systemd
	"KiB":        true, "MiB": true, "GiB": true, "NaN": true, "W3C": true, // units, numbers, bodies
	"HttpOnly": true, "EventSource": true, // cookies and browsers
	"SubRip": true,                // the SRT format's name
	"VmRSS":  true, "VmHWM": true, // /proc/<pid>/status
	"WireServer":      true, // Azure's platform address
	"SubtitlesWriter": true, // openai/whisper's, in Python
	"OpenTelemetry":   true, // the tracing project (docs/operations.md, Traces)
}

// goFile is one parsed Go file of ours.
type goFile struct {
	rel     string // path relative to the module root, for messages
	pkg     *goPkg
	file    *ast.File
	foreign map[string]bool // names under which the file imports packages of other modules
	imports map[string]bool // import paths of the file
}

// goPkg is one package (a folder) of ours, its tests included, or an imported package of
// another module.
type goPkg struct {
	name    string
	path    string // import path
	decls   map[string]bool
	types   map[string]*goType
	imports map[string]bool // import paths of its files
	strs    map[string]bool // the words of its string literals
	main    bool
}

// goType is what the check knows of a declared type.
type goType struct {
	members map[string]bool
	embeds  []typeRef
	open    bool // embeds a type of another module: any member will do
}

// typeRef names a type: the import path of its package and its name.
type typeRef struct{ path, name string }

// index is every package of ours, the packages they import (parsed on demand) and the files.
type index struct {
	fset    *token.FileSet
	pkgs    map[string]*goPkg   // by import path, ours
	byName  map[string][]*goPkg // ours, main packages excepted
	files   []*goFile
	dirs    map[string]string // import path → folder, of every dependency
	foreign map[string]*goPkg // parsed dependencies, by import path
	words   map[string]bool   // every top-level name and member of ours
}

// loaded is the index of the modules, read once for the tests of this package.
var loaded struct {
	sync.Mutex
	idx *index
}

func loadModule(t *testing.T, root string) *index {
	t.Helper()
	loaded.Lock()
	defer loaded.Unlock()
	if loaded.idx == nil {
		loaded.idx = readModule(t, root)
	}
	return loaded.idx
}

// readModule parses every Go file of the modules at root and asks go list where their
// dependencies lie (the three go list run at once).
func readModule(t *testing.T, root string) *index {
	t.Helper()
	var deps sync.WaitGroup
	lists := map[string]map[string]string{}
	var listsMu sync.Mutex
	for _, dir := range moduleDirs(t, root) {
		deps.Go(func() {
			m := listDeps(t, dir)
			listsMu.Lock()
			lists[dir] = m
			listsMu.Unlock()
		})
	}
	idx := &index{
		fset: token.NewFileSet(), pkgs: map[string]*goPkg{}, byName: map[string][]*goPkg{},
		dirs: map[string]string{}, foreign: map[string]*goPkg{}, words: map[string]bool{},
	}
	for _, dir := range moduleDirs(t, root) {
		modPath := module
		if dir != root {
			modPath = readModulePath(t, dir)
		}
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if path != dir && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
					return filepath.SkipDir
				}
				if path != dir {
					if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
						return filepath.SkipDir // a nested module, walked on its own
					}
				}
				return nil
			}
			if !strings.HasSuffix(name, ".go") {
				return nil
			}
			relDir, _ := filepath.Rel(dir, filepath.Dir(path))
			importPath := modPath
			if relDir != "." {
				importPath += "/" + filepath.ToSlash(relDir)
			}
			f, err := parser.ParseFile(idx.fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			p := idx.pkgs[importPath]
			if p == nil {
				p = newPkg(importPath)
				idx.pkgs[importPath] = p
			}
			pkgName := strings.TrimSuffix(f.Name.Name, "_test")
			if !strings.HasSuffix(name, "_test.go") || p.name == "" {
				p.name = pkgName
			}
			p.main = p.main || f.Name.Name == "main"
			p.add(f)
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					for _, w := range wordRE.FindAllString(lit.Value, -1) {
						p.strs[w] = true
					}
				}
				return true
			})
			rel, _ := filepath.Rel(root, path)
			gf := &goFile{rel: filepath.ToSlash(rel), pkg: p, file: f, foreign: map[string]bool{}, imports: map[string]bool{}}
			for _, imp := range f.Imports {
				ip, _ := strconv.Unquote(imp.Path.Value)
				gf.imports[ip] = true
				if strings.HasPrefix(ip, module) {
					continue
				}
				local := importName(ip)
				if imp.Name != nil {
					local = imp.Name.Name
				}
				gf.foreign[local] = true
			}
			idx.files = append(idx.files, gf)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	deps.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, m := range lists {
		maps.Copy(idx.dirs, m)
	}
	for _, p := range idx.pkgs {
		if !p.main {
			idx.byName[p.name] = append(idx.byName[p.name], p)
		}
		for d := range p.decls {
			idx.words[d] = true
			for _, prefix := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
				if rest, ok := strings.CutPrefix(d, prefix); ok && rest != "" {
					idx.words[strings.TrimPrefix(rest, "_")] = true
				}
			}
		}
		for _, ty := range p.types {
			for m := range ty.members {
				idx.words[m] = true
			}
		}
	}
	return idx
}

// readModulePath is the module path of the go.mod in dir.
func readModulePath(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	t.Fatalf("%s/go.mod names no module", dir)
	return ""
}

// listDeps is the folder of every package the module at dir depends on, by import path. It
// may run on a goroutine of its own: it reports with Errorf.
func listDeps(t *testing.T, dir string) map[string]string {
	cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}\t{{.Dir}}", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("go list -deps in %s: %v\n%s", dir, err, stderr.Bytes())
		return nil
	}
	dirs := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, d, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok && d != "" {
			dirs[path] = d
		}
	}
	return dirs
}

// importName is the name a package is imported under by default: its path's last element,
// without a major version suffix or a go- prefix, as goimports guesses it.
func importName(path string) string {
	elems := strings.Split(path, "/")
	last := elems[len(elems)-1]
	if len(elems) > 1 && regexp.MustCompile(`^v[0-9]+$`).MatchString(last) {
		last = elems[len(elems)-2]
	}
	last = strings.TrimPrefix(last, "go-")
	return strings.NewReplacer("-", "", ".", "").Replace(last)
}

func newPkg(path string) *goPkg {
	return &goPkg{path: path, decls: map[string]bool{}, types: map[string]*goType{}, imports: map[string]bool{},
		strs: map[string]bool{}}
}

// add records a file's declarations.
func (p *goPkg) add(f *ast.File) {
	imports := map[string]string{} // local name → import path
	for _, imp := range f.Imports {
		ip, _ := strconv.Unquote(imp.Path.Value)
		p.imports[ip] = true
		local := importName(ip)
		if imp.Name != nil {
			local = imp.Name.Name
		}
		imports[local] = ip
	}
	typ := func(name string) *goType {
		ty := p.types[name]
		if ty == nil {
			ty = &goType{members: map[string]bool{}}
			p.types[name] = ty
		}
		return ty
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				p.decls[d.Name.Name] = true
				continue
			}
			if name := baseTypeName(d.Recv.List[0].Type); name != "" {
				typ(name).members[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.decls[n.Name] = true
					}
				case *ast.TypeSpec:
					p.decls[s.Name.Name] = true
					ty := typ(s.Name.Name)
					p.addMembers(ty, s.Type, imports)
				}
			}
		}
	}
}

// addMembers records the fields, interface methods and embedded types of a type expression.
func (p *goPkg) addMembers(ty *goType, expr ast.Expr, imports map[string]string) {
	ref := func(e ast.Expr) {
		switch e := unstar(e).(type) {
		case *ast.Ident:
			ty.embeds = append(ty.embeds, typeRef{p.path, e.Name})
			ty.members[e.Name] = true
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && imports[x.Name] != "" {
				ty.embeds = append(ty.embeds, typeRef{imports[x.Name], e.Sel.Name})
			} else {
				ty.open = true
			}
			ty.members[e.Sel.Name] = true
		default:
			ty.open = true
		}
	}
	switch e := unstar(expr).(type) {
	case *ast.StructType:
		for _, f := range e.Fields.List {
			if len(f.Names) == 0 {
				ref(f.Type)
			}
			for _, n := range f.Names {
				ty.members[n.Name] = true
			}
		}
	case *ast.InterfaceType:
		for _, m := range e.Methods.List {
			if len(m.Names) == 0 {
				ref(m.Type)
			}
			for _, n := range m.Names {
				ty.members[n.Name] = true
			}
		}
	case *ast.Ident, *ast.SelectorExpr, *ast.IndexExpr, *ast.IndexListExpr:
		// An alias or a type defined from another: its fields (and, for an alias, methods).
		ref(baseExpr(e))
	}
}

func unstar(e ast.Expr) ast.Expr {
	for {
		s, ok := e.(*ast.StarExpr)
		if !ok {
			return e
		}
		e = s.X
	}
}

func baseExpr(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case *ast.IndexExpr:
		return x.X
	case *ast.IndexListExpr:
		return x.X
	}
	return e
}

// baseTypeName is the name of a method's receiver type: T of T, *T, T[K], *T[K].
func baseTypeName(e ast.Expr) string {
	if id, ok := baseExpr(unstar(e)).(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// pkg is the package at an import path: one of ours, or another module's, parsed now.
func (idx *index) pkg(path string) *goPkg {
	if p := idx.pkgs[path]; p != nil {
		return p
	}
	if p, ok := idx.foreign[path]; ok {
		return p
	}
	var p *goPkg
	if dir := idx.dirs[path]; dir != "" {
		p = newPkg(path)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(idx.fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
			if err != nil {
				continue
			}
			p.name = f.Name.Name
			p.add(f)
		}
	}
	idx.foreign[path] = p
	return p
}

// hasMember reports whether the type name of the package at path has member, following
// embedded types; seen guards against cycles.
func (idx *index) hasMember(path, name, member string, seen map[typeRef]bool) bool {
	r := typeRef{path, name}
	if seen[r] {
		return false
	}
	seen[r] = true
	p := idx.pkg(path)
	if p == nil {
		return true // a package we cannot read: no claim against it
	}
	ty := p.types[name]
	if ty == nil {
		return !strings.HasPrefix(path, module) // another module's type we could not find
	}
	if ty.open || ty.members[member] {
		return true
	}
	for _, e := range ty.embeds {
		if idx.hasMember(e.path, e.name, member, seen) {
			return true
		}
	}
	return false
}

// problem is one name that does not resolve, where it was written.
func problem(where string, line int, name, why string) string {
	return fmt.Sprintf("%s:%d: %s: %s", where, line, name, why)
}

var (
	// qualifiedRE: pkg.Name and pkg.Name.Member, not after '.', '/', a letter or a digit.
	qualifiedRE = regexp.MustCompile(`(^|[^\w./-])([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.([A-Za-z_]\w*))?`)
	// methodRE: T.Member and (*T).Member.
	methodRE = regexp.MustCompile(`(^|[^\w./*-])(?:\(\*([A-Z]\w*)\)|([A-Z]\w*))\.([A-Za-z_]\w*)`)
	// linkRE: [Name], [*Name], [Name.Member], [pkg.Name], [pkg.Name.Member].
	linkRE = regexp.MustCompile(`\[\*?((?:[a-z][a-z0-9]*\.)?[A-Z]\w*(?:\.[A-Za-z_]\w*)?)\]`)
	// linkDefRE: a link definition of a doc comment, [text]: URL.
	linkDefRE = regexp.MustCompile(`(?m)^\s*\[([^\]]+)\]:\s*\S`)
	// wordRE: a word of a string literal.
	wordRE = regexp.MustCompile(`[A-Za-z_]\w*`)
	// camelRE: a bare word written like an exported identifier of several words.
	camelRE = regexp.MustCompile(`(^|[^\w./*\[-])([A-Z][a-z0-9]+[A-Z]\w*)`)
)

// checkQualified checks pkg.Name[.Member] in text; foreign are the package names that mean a
// package of another module there.
func (idx *index) checkQualified(text string, foreign map[string]bool, report func(name, why string)) {
	for _, m := range qualifiedRE.FindAllStringSubmatch(text, -1) {
		pkgName, name, member := m[2], m[3], m[4]
		cands := idx.byName[pkgName]
		if len(cands) == 0 || foreign[pkgName] {
			continue
		}
		var found []*goPkg
		for _, p := range cands {
			if p.decls[name] {
				found = append(found, p)
			}
		}
		if len(found) == 0 {
			report(pkgName+"."+name, "package "+pkgName+" declares no "+name)
			continue
		}
		if member == "" {
			continue
		}
		isType, ok := false, false
		for _, p := range found {
			if p.types[name] != nil {
				isType = true
				ok = ok || idx.hasMember(p.path, name, member, map[typeRef]bool{})
			}
		}
		if isType && !ok {
			report(pkgName+"."+name+"."+member, "type "+pkgName+"."+name+" has no field or method "+member)
		}
	}
}

// checkMember checks T.Member and (*T).Member in text, with T looked up in pkgs.
func (idx *index) checkMember(text string, pkgs []*goPkg, report func(name, why string)) {
	for _, m := range methodRE.FindAllStringSubmatch(text, -1) {
		name, member := m[2]+m[3], m[4]
		isType, ok := false, false
		for _, p := range pkgs {
			if p.types[name] != nil {
				isType = true
				ok = ok || idx.hasMember(p.path, name, member, map[typeRef]bool{})
			}
		}
		if isType && !ok {
			report(name+"."+member, "type "+name+" has no field or method "+member)
		}
	}
}

// checkGoFile checks the comments of one Go file.
func (idx *index) checkGoFile(f *goFile) []string {
	var problems []string
	own := []*goPkg{f.pkg}
	for _, cg := range f.file.Comments {
		text := commentText(cg)
		defs := map[string]bool{}
		for _, m := range linkDefRE.FindAllStringSubmatch(text, -1) {
			defs[m[1]] = true
		}
		for i, line := range strings.Split(text, "\n") {
			at := idx.fset.Position(cg.Pos()).Line + i
			report := func(name, why string) { problems = append(problems, problem(f.rel, at, name, why)) }
			if linkDefRE.MatchString(line) {
				continue
			}
			idx.checkQualified(line, f.foreign, report)
			idx.checkMember(line, own, report)
			if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "   ") {
				continue // a code block: it declares names of its own, and indexes with brackets
			}
			for _, m := range linkRE.FindAllStringSubmatchIndex(line, -1) {
				link := line[m[2]:m[3]]
				if defs[link] || strings.ToUpper(link) == link || !linkBoundary(line, m[0], m[1]) {
					continue
				}
				first, _, qualified := strings.Cut(link, ".")
				switch {
				case qualified && unicode.IsLower(rune(first[0])):
					// pkg.Name: checked above.
				case !qualified && !f.pkg.decls[link] && !f.foreign[link]:
					report("["+link+"]", "a doc link to nothing: package "+f.pkg.name+" declares no "+link)
				}
			}
			for _, m := range camelRE.FindAllStringSubmatch(line, -1) {
				word := m[2]
				if !idx.knownWord(f, word) {
					report(word, "no identifier of ours, nor of what the file imports, has this name")
				}
			}
		}
	}
	return problems
}

// linkBoundary reports whether the brackets at line[start:end] stand where go doc takes them
// for a link: after the start of the line, a space or punctuation other than ']', and before
// the end of the line, a space or punctuation other than '[' and '(' (T[K], a[i] and Markdown's
// [text](url) are no links).
func linkBoundary(line string, start, end int) bool {
	if start > 0 {
		c := rune(line[start-1])
		if !unicode.IsSpace(c) && !unicode.IsPunct(c) || c == ']' {
			return false
		}
	}
	if end < len(line) {
		c := rune(line[end])
		if !unicode.IsSpace(c) && !unicode.IsPunct(c) || c == '[' || c == '(' {
			return false
		}
	}
	return true
}

// knownWord reports whether word names something of ours, of what p imports, or no Go at all.
func (idx *index) knownWord(f *goFile, word string) bool {
	if idx.words[word] || nonGoWords[word] || f.pkg.strs[word] {
		return true
	}
	for path := range f.imports {
		ip := idx.pkg(path)
		if ip == nil {
			continue
		}
		if ip.decls[word] {
			return true
		}
		for _, ty := range ip.types {
			if ty.members[word] {
				return true
			}
		}
	}
	return false
}

// commentText is a comment group's text with its markers removed, one line per line of the
// file (unlike ast.CommentGroup.Text, which drops blank lines and directives).
func commentText(cg *ast.CommentGroup) string {
	var lines []string
	for _, c := range cg.List {
		s := c.Text
		if rest, ok := strings.CutPrefix(s, "//"); ok {
			lines = append(lines, rest)
			continue
		}
		s = strings.TrimSuffix(strings.TrimPrefix(s, "/*"), "*/")
		lines = append(lines, strings.Split(s, "\n")...)
	}
	return strings.Join(lines, "\n")
}

// markdownDocs are README.md and docs/*.md, relative to root.
func markdownDocs(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		out = append(out, filepath.ToSlash(rel))
	}
	slices.Sort(out)
	return out
}

var codeSpanRE = regexp.MustCompile("(`+)([^`]+?)(`+)")

// checkMarkdown checks the code spans and Go blocks of one Markdown file.
func (idx *index) checkMarkdown(t *testing.T, root, doc string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var all []*goPkg
	for _, p := range idx.pkgs {
		all = append(all, p)
	}
	var problems []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	fence, goBlock := "", false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		report := func(name, why string) { problems = append(problems, problem(doc, n, name, why)) }
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			switch {
			case fence == "":
				fence = trimmed[:3]
				goBlock = strings.TrimSpace(trimmed[3:]) == "go"
			case strings.HasPrefix(trimmed, fence):
				fence, goBlock = "", false
			}
			continue
		}
		var texts []string
		switch {
		case fence != "" && goBlock:
			texts = []string{line}
		case fence == "":
			for _, m := range codeSpanRE.FindAllStringSubmatch(line, -1) {
				texts = append(texts, m[2])
			}
		}
		for _, text := range texts {
			idx.checkQualified(text, nil, report)
			idx.checkMember(text, all, report)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return problems
}

// mdPathRE: a Markdown file named in a comment, with or without folders.
var mdPathRE = regexp.MustCompile(`(?:^|[\s("'` + "`" + `])((?:\.\.?/)?(?:[\w.-]+/)*[\w.-]+\.md)\b`)

// TestDocPaths checks that the Markdown files Go comments point at exist: a name with folders
// (docs/design.md, spec/provider-facts.md) or a bare one (README.md, provider-facts.md),
// relative to the module root, docs/, docs/spec/ (the service's documents) or the comment's
// folder. The comments of every Go file of the module are read, as TestDocIdentifiers reads
// them.
func TestDocPaths(t *testing.T) {
	needTool(t, "go")
	root := moduleRoot(t)
	idx := loadModule(t, root)
	var problems []string
	for _, f := range idx.files {
		dir := filepath.Dir(filepath.Join(root, f.rel))
		for _, cg := range f.file.Comments {
			for i, line := range strings.Split(commentText(cg), "\n") {
				for _, m := range mdPathRE.FindAllStringSubmatch(line, -1) {
					name := filepath.FromSlash(m[1])
					found := false
					for _, base := range []string{root, filepath.Join(root, "docs"), filepath.Join(root, "docs", "spec"), dir} {
						if _, err := os.Stat(filepath.Join(base, name)); err == nil {
							found = true
						}
					}
					if !found {
						at := idx.fset.Position(cg.Pos()).Line + i
						problems = append(problems, problem(f.rel, at, m[1], "no such file in the repository"))
					}
				}
			}
		}
	}
	if len(problems) > 0 {
		t.Errorf("Go comments point at Markdown files that are not in the repository:\n%s",
			strings.Join(problems, "\n"))
	}
}
