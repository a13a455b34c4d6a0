package subtitles

import (
	"math"
	"strings"
)

// Line-breaking weights. A line break costs lineBreakWeight × the break cost of its position
// (see breakCost), plus imbalance and orphan penalties. Balance is in units of a full line:
// two lines differing by half a line cost balanceWeight/2.
const (
	lineBreakWeight = 0.8
	balanceWeight   = 12.0
	orphanLineCost  = 8.0 // one word alone on a line of a cue of three or more words
	topHeavyCost    = 1.0 // Netflix prefers a bottom-heavy pyramid
)

// textLen is the length in runes of words [a,b) joined for display.
func (s *segmenter) textLen(a, b int) int {
	return s.cum[b] - s.off[a]
}

// fits reports whether words [a,b) fit one line whose start carries prefix extra runes. A
// word longer than a line fits a line of its own without a prefix: it can go nowhere else,
// and a prefix (a label) would only lengthen the line Segment reports.
func (s *segmenter) fits(a, b, prefix int) bool {
	return prefix+s.textLen(a, b) <= s.p.MaxCharsPerLine || (b-a == 1 && prefix == 0 && s.hasLong(a, b))
}

// sep is the separator before word a inside a line: a space, or nothing between CJK words.
func (s *segmenter) sep(a int) int {
	if a == 0 || s.w[a].tightBefore {
		return 0
	}
	return 1
}

// layout chooses the line breaks of words [i,j) whose first line carries prefix extra runes
// (a label). It keeps one line when the text fits (N-ONELINE), otherwise picks the break
// with the best balance, preferring punctuation and "before a conjunction or preposition"
// and avoiding orphans, with as few lines as possible. It reports false when no layout fits
// MaxCharsPerLine × MaxLines, a word longer than a line taking a line of its own (see fits).
// lo is a lower bound on the first word of a last line that fits (0 when unknown). With
// out != nil the word indices that start lines 2… are appended to *out.
func (s *segmenter) layout(i, j, prefix, lo int, out *[]int) (float64, bool) {
	cpl := s.p.MaxCharsPerLine
	if prefix+s.textLen(i, j) <= cpl {
		return 0, true
	}
	if s.p.MaxLines < 2 || j-i < 2 {
		return 0, false
	}
	k := j - i
	best, bestB := math.Inf(1), -1
	for b := max(i+1, lo); b < j; b++ {
		if !s.fits(i, b, prefix) {
			break // a longer first line does not fit either
		}
		if !s.fits(b, j, 0) {
			continue
		}
		l1, l2 := prefix+s.textLen(i, b), s.textLen(b, j)
		c := lineBreakWeight*s.brk[b] + balanceWeight*math.Abs(float64(l1-l2))/float64(cpl)
		if k >= 3 && (b == i+1 || b == j-1) {
			c += orphanLineCost
		}
		if l1 > l2 {
			c += topHeavyCost
		}
		if c < best {
			best, bestB = c, b
		}
	}
	if bestB >= 0 {
		if out != nil {
			*out = append(*out, bestB)
		}
		return best, true
	}
	if s.p.MaxLines < 3 {
		return 0, false
	}
	return s.layoutMany(i, j, prefix, out)
}

// layoutMany is the general case for profiles allowing three or more lines: the fewest lines
// that fit (found by greedy filling, which is minimal), then a small dynamic programme over
// break positions that balances them. It is only reached when two lines do not suffice.
func (s *segmenter) layoutMany(i, j, prefix int, out *[]int) (float64, bool) {
	cpl := s.p.MaxCharsPerLine
	if !s.fits(i, i+1, prefix) {
		return 0, false
	}
	m, lineStart, pre := 1, i, prefix
	for b := i + 1; b < j; b++ {
		if !s.fits(lineStart, b+1, pre) {
			// Word b starts a line; it always fits one alone (a word longer than a line
			// included), so greedy filling stays minimal.
			m, lineStart, pre = m+1, b, 0
		}
	}
	if m > s.p.MaxLines {
		return 0, false
	}
	k := j - i
	avg := float64(prefix+s.textLen(i, j)) / float64(m)
	lineCost := func(a, b int) float64 { // words [a,b) as one line, or +Inf
		pre := 0
		if a == i {
			pre = prefix
		}
		if !s.fits(a, b, pre) {
			return math.Inf(1)
		}
		n := pre + s.textLen(a, b)
		c := balanceWeight * math.Abs(float64(n)-avg) / float64(cpl)
		if b-a == 1 && k >= 3 {
			c += orphanLineCost
		}
		if a > i {
			c += lineBreakWeight * s.brk[a]
		}
		return c
	}
	// dp[l][b]: best cost of words [i,i+b) in l+1 lines.
	dp := make([][]float64, m)
	from := make([][]int, m)
	for l := range dp {
		dp[l] = make([]float64, k+1)
		from[l] = make([]int, k+1)
		for b := range dp[l] {
			dp[l][b] = math.Inf(1)
		}
	}
	for b := 1; b <= k; b++ {
		dp[0][b] = lineCost(i, i+b)
	}
	for l := 1; l < m; l++ {
		for b := l + 1; b <= k; b++ {
			for a := l; a < b; a++ {
				if c := dp[l-1][a] + lineCost(i+a, i+b); c < dp[l][b] {
					dp[l][b], from[l][b] = c, a
				}
			}
		}
	}
	if math.IsInf(dp[m-1][k], 1) {
		return 0, false
	}
	if out != nil {
		breaks := make([]int, m-1)
		for l, b := m-1, k; l > 0; l-- {
			b = from[l][b]
			breaks[l-1] = i + b
		}
		*out = append(*out, breaks...)
	}
	return dp[m-1][k], true
}

// joinWords writes words [a,b) as displayed.
func (s *segmenter) joinWords(sb *strings.Builder, a, b int) {
	for t := a; t < b; t++ {
		if t > a && !s.w[t].tightBefore {
			sb.WriteByte(' ')
		}
		sb.WriteString(s.w[t].text)
	}
}
