package jsontext

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	var got []string
	Members([]byte(` { "a\"b" : "x,}" , "n":[1,{"c":"]"}], "e":{} ,"z": -1.5e3 } `), func(k, v []byte) {
		got = append(got, string(k)+"="+string(v))
	})
	want := []string{`"a\"b"="x,}"`, `"n"=[1,{"c":"]"}]`, `"e"={}`, `"z"=-1.5e3`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("members = %q, want %q", got, want)
	}
	// Broken text ends the walk without a panic.
	for _, broken := range []string{`{"a"`, `{"a":`, `{"a":[1,`, `{"a":"x`, `{`, ``, `[1]`, `{"a" 1}`} {
		Members([]byte(broken), func(k, v []byte) {})
	}
}

func TestSkipValue(t *testing.T) {
	f := func(text string, i int, want string) {
		t.Helper()
		if got := text[i:SkipValue([]byte(text), i)]; got != want {
			t.Fatalf("SkipValue(%s, %d) = %s, want %s", text, i, got, want)
		}
	}
	f(`[{"a":"}\"]"},2]`, 1, `{"a":"}\"]"}`)
	f(`[{"a":"}\"]"},2]`, 14, `2`)
	f(`["x\\",1]`, 1, `"x\\"`)
	f(`{"n":-1.5e3 }`, 5, `-1.5e3`)
	f(`[[],[[1]]]`, 0, `[[],[[1]]]`)
	f(`{"a":`, 5, ``)
	f(`{"a":[1,`, 5, `[1,`) // unterminated: to the end
}

func TestKeyIs(t *testing.T) {
	f := func(key, name string, want bool) {
		t.Helper()
		if got := KeyIs([]byte(key), name); got != want {
			t.Fatalf("KeyIs(%s, %q) = %v, want %v", key, name, got, want)
		}
	}
	f(`"$set"`, "$set", true)
	f(`"\u0024set"`, "$set", true)
	f(`"$set_once"`, "$set", false)
	f(`"a\"b"`, `a"b`, true)
	f(`""`, "", true)
	f(`"`, "", false)
	f("\"\\n\x01\"", "\n\x01", false) // an unescaped control character is refused
}

func TestMergeObjects(t *testing.T) {
	f := func(base, over, want string) {
		t.Helper()
		got := string(MergeObjects(nil, []byte(base), []byte(over)))
		if got != want || !json.Valid([]byte(got)) {
			t.Fatalf("MergeObjects(%s, %s) = %s, want %s", base, over, got, want)
		}
	}
	f(`{"a":1,"b":2}`, `{"b":3,"c":4}`, `{"a":1,"b":3,"c":4}`)
	f(`{}`, `{"c":4}`, `{"c":4}`)
	f(`{"a":1}`, `{}`, `{"a":1}`)
	f(`{}`, `{}`, `{}`)
	f(` { "a" : [1, {"x":"}"}] } `, `{"b":"\""}`, `{"a":[1, {"x":"}"}],"b":"\""}`)
}

func TestConcatArrays(t *testing.T) {
	f := func(a, b, want string) {
		t.Helper()
		if got := string(ConcatArrays(nil, []byte(a), []byte(b))); got != want {
			t.Fatalf("ConcatArrays(%s, %s) = %s, want %s", a, b, got, want)
		}
	}
	f(`["a"]`, `["b","c"]`, `["a","b","c"]`)
	f(`[]`, `["b"]`, `["b"]`)
	f(` [ "a" ] `, `[ ]`, `["a"]`)
	f(`[]`, `[]`, `[]`)
}

func TestObjectWriter(t *testing.T) {
	w := NewObjectWriter([]byte("x"))
	if got := string(w.End()); got != `x{}` {
		t.Fatalf("empty object: %s", got)
	}
	w = NewObjectWriter(nil)
	w.Member([]byte(`"a"`), []byte(`1`))
	w.Member([]byte(`"b"`), []byte(`{"c":[]}`))
	if got := string(w.End()); got != `{"a":1,"b":{"c":[]}}` {
		t.Fatalf("object: %s", got)
	}
}

// The walker and the text helpers allocate nothing on text without escapes.
func TestNoAllocations(t *testing.T) {
	obj := []byte(`{"company":"c1","n":-1.5e3,"o":{"k":["v"]},"t":true}`)
	allocs := testing.AllocsPerRun(100, func() {
		n := 0
		Members(obj, func(key, value []byte) {
			if KeyIs(key, "company") && Text(value) == "c1" {
				n++
			}
			if _, ok := Number(value); ok {
				n++
			}
		})
		if n != 2 {
			t.Fatalf("%d members matched, want 2", n)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations a walk, want none", allocs)
	}
}
