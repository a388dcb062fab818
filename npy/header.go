package npy

import (
	"fmt"
	"strconv"
	"strings"
)

// parseHeader parses a .npy header, the Python dict literal with the keys
// 'descr', 'fortran_order' and 'shape', into an Array without data.
func parseHeader(h string) (*Array, error) {
	p := &parser{s: h}
	a, err := p.dict()
	if err != nil {
		return nil, fmt.Errorf("npy: bad header %q: %w", strings.TrimRight(h, " \n"), err)
	}
	return a, nil
}

// parser reads the subset of Python literal syntax that .npy headers use:
// a dict of string keys whose values are strings, booleans and tuples of
// integers.
type parser struct {
	s   string
	pos int
}

func (p *parser) space() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

// accept skips space and then c if it comes next, and reports whether it did.
func (p *parser) accept(c byte) bool {
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(c byte) error {
	if !p.accept(c) {
		return p.errorf("want %q", c)
	}
	return nil
}

func (p *parser) errorf(format string, args ...any) error {
	at := "at end"
	if p.pos < len(p.s) {
		at = fmt.Sprintf("at offset %d", p.pos)
	}
	return fmt.Errorf(format+" "+at, args...)
}

// dict parses the whole header and checks its keys and values.
func (p *parser) dict() (*Array, error) {
	if err := p.expect('{'); err != nil {
		return nil, err
	}
	var (
		a    Array
		seen = map[string]bool{}
	)
	for !p.accept('}') {
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		switch key {
		case "descr":
			p.space()
			if p.pos < len(p.s) && p.s[p.pos] == '[' {
				return nil, fmt.Errorf("structured dtypes are not supported: supported are %s", supported)
			}
			d, err := p.str()
			if err != nil {
				return nil, err
			}
			if alias, ok := aliases[d]; ok {
				d = alias
			}
			if _, ok := itemSizes[d]; !ok {
				return nil, fmt.Errorf("unsupported dtype %q: supported are %s", d, supported)
			}
			a.Dtype = d
		case "fortran_order":
			f, err := p.boolean()
			if err != nil {
				return nil, err
			}
			if f {
				return nil, fmt.Errorf("Fortran order is not supported: only C order is")
			}
		case "shape":
			if a.Shape, err = p.tuple(); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unexpected key %q", key)
		}
		if !p.accept(',') {
			if err := p.expect('}'); err != nil {
				return nil, err
			}
			break
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return nil, fmt.Errorf("missing key %q", k)
		}
	}
	p.space()
	if p.pos != len(p.s) {
		return nil, p.errorf("unexpected text after the dict")
	}
	return &a, nil
}

// str parses a Python string literal in single or double quotes, without
// escapes (no dtype or key needs one).
func (p *parser) str() (string, error) {
	p.space()
	if p.pos >= len(p.s) || (p.s[p.pos] != '\'' && p.s[p.pos] != '"') {
		return "", p.errorf("want a string")
	}
	q := p.s[p.pos]
	end := strings.IndexByte(p.s[p.pos+1:], q)
	if end < 0 {
		return "", p.errorf("unterminated string")
	}
	s := p.s[p.pos+1 : p.pos+1+end]
	if strings.IndexByte(s, '\\') >= 0 {
		return "", p.errorf("escapes in strings are not supported")
	}
	p.pos += end + 2
	return s, nil
}

func (p *parser) boolean() (bool, error) {
	p.space()
	for _, w := range []string{"True", "False"} {
		if strings.HasPrefix(p.s[p.pos:], w) {
			p.pos += len(w)
			return w == "True", nil
		}
	}
	return false, p.errorf("want True or False")
}

// tuple parses a tuple of non-negative integers such as (), (3,) or (3, 4).
func (p *parser) tuple() ([]int, error) {
	if err := p.expect('('); err != nil {
		return nil, err
	}
	shape := []int{}
	for !p.accept(')') {
		p.space()
		start := p.pos
		for p.pos < len(p.s) && '0' <= p.s[p.pos] && p.s[p.pos] <= '9' {
			p.pos++
		}
		if start == p.pos {
			return nil, p.errorf("want a non-negative integer dimension")
		}
		d, err := strconv.Atoi(p.s[start:p.pos])
		if err != nil {
			return nil, fmt.Errorf("dimension %s: %w", p.s[start:p.pos], err)
		}
		if p.pos < len(p.s) && p.s[p.pos] == 'L' {
			p.pos++ // Python 2 long, as in files written by old NumPy
		}
		shape = append(shape, d)
		if !p.accept(',') {
			if err := p.expect(')'); err != nil {
				return nil, err
			}
			break
		}
	}
	return shape, nil
}
