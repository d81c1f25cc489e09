package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckBind(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:9101", "", true}, {"localhost:9101", "", true}, {"[::1]:9101", "", true},
		{"0.0.0.0:9101", "", false}, {"10.0.0.2:9101", "", false}, {":9101", "", false},
		{"0.0.0.0:9101", "0123456789abcdef", true}, {"nonsense", "", false},
	} {
		if err := CheckBind(tc.addr, tc.token); (err == nil) != tc.ok {
			t.Errorf("CheckBind(%q, %q) = %v", tc.addr, tc.token, err)
		}
	}
}

func TestReadTokenRefusesShortTokens(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	short, long, empty := write("short", "abc\n"), write("long", "  0123456789abcdef \n"), write("empty", "\n")
	for _, tc := range []struct {
		token, file, want, err string
	}{
		{"", "", "", ""},
		{"0123456789abcdef", "", "0123456789abcdef", ""},
		{"0123456789abcde", "", "", "at least 16"},
		{"", short, "", "at least 16"},
		{"", long, "0123456789abcdef", ""},
		{"", empty, "", "is empty"},
		{"x", long, "", "not both"},
		{"", filepath.Join(dir, "missing"), "", "is not there: make the agents' token first"},
	} {
		got, err := ReadToken(tc.token, tc.file)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ReadToken(%q, %q) = %q, %v; want %q, error with %q", tc.token, tc.file, got, err, tc.want, tc.err)
		}
	}
}

func TestDecodeJSONIsStrictAndBounded(t *testing.T) {
	type msg struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	for _, tc := range []struct {
		name, body string
		code       int // 0: accepted
	}{
		{"valid", `{"a":1,"b":"x"}`, 0},
		{"valid with trailing space", "{\"a\":1}\n  ", 0},
		{"unknown field", `{"a":1,"c":2}`, 400},
		{"trailing value", `{"a":1}{"a":2}`, 400},
		{"trailing garbage", `{"a":1} x`, 400},
		{"wrong type", `{"a":"1"}`, 400},
		{"not JSON", `{a:1}`, 400},
		{"empty", ``, 400},
		{"too large", `{"b":"` + strings.Repeat("x", 200) + `"}`, 413},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewBufferString(tc.body))
		var m msg
		err := DecodeJSON(rec, req, 128, &m)
		if tc.code == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var re *RequestError
		if !errors.As(err, &re) || re.Code != tc.code {
			t.Errorf("%s: error %v, want status %d", tc.name, err, tc.code)
		}
	}
}
