package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"

	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
)

// MinTokenLen is the shortest token accepted, in bytes: 16 random bytes
// (base64: 24 characters, e.g. from "head -c 32 /dev/urandom | base64")
// cannot be guessed over a network.
const MinTokenLen = 16

// TokenHint tells a user how to make a token.
const TokenHint = `make one with: head -c 32 /dev/urandom | base64 > ~/.cp-token (and pass --token-file ~/.cp-token everywhere)`

// CheckToken refuses a token shorter than MinTokenLen ("" means no token).
func CheckToken(token string) error {
	if token != "" && len(token) < MinTokenLen {
		return fmt.Errorf("the token is %d bytes; at least %d are needed: %s", len(token), MinTokenLen, TokenHint)
	}
	return nil
}

// ReadToken returns the token from a flag value or a file ("" if neither),
// refusing one that is too short.
func ReadToken(token, file string) (string, error) {
	if token != "" && file != "" {
		return "", errors.New("give --token or --token-file, not both")
	}
	if file != "" {
		b, err := readfile.Limited(file, 4096)
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("token file %s is not there: make the agents' token first, the same file on every host (%s)", termsafe.Escape(file), TokenHint)
		}
		if err != nil {
			return "", fmt.Errorf("read token file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return "", fmt.Errorf("token file %s is empty: %s", termsafe.Escape(file), TokenHint)
		}
	}
	if err := CheckToken(token); err != nil {
		return "", err
	}
	return token, nil
}

// CheckBind refuses to serve an API on a non-loopback address without a
// token: anyone who can reach it could otherwise drive it.
func CheckBind(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if token != "" {
		return nil
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("address %s is not loopback: give a shared --token-file so that only the controller can use it (%s)", addr, TokenHint)
}

// ServerToken reads the token a server on addr requires (from token or
// tokenFile) and checks that addr may be served with it: off loopback, a
// token is required.
func ServerToken(token, tokenFile, addr string) (string, error) {
	tok, err := ReadToken(token, tokenFile)
	if err != nil {
		return "", err
	}
	return tok, CheckBind(addr, tok)
}

// ErrUnauthorized is the reply to a request without the right token.
var ErrUnauthorized = errors.New("missing or wrong token (send Authorization: Bearer TOKEN)")

// ReplyJSON writes v as a JSON response with the status code.
func ReplyJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ReplyError writes {"error": err} with the status code.
func ReplyError(w http.ResponseWriter, code int, err error) {
	ReplyJSON(w, code, map[string]string{"error": err.Error()})
}

// RequestError is a request refused before it was acted on, with the
// status code to answer.
type RequestError struct {
	Code int
	Err  error
}

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// ReadBody reads a request body of at most limit bytes; a larger one is a
// *RequestError with status 413 (never truncated silently).
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &RequestError{Code: http.StatusRequestEntityTooLarge, Err: fmt.Errorf("request body above the limit of %d bytes", limit)}
		}
		return nil, &RequestError{Code: http.StatusBadRequest, Err: fmt.Errorf("read request: %w", err)}
	}
	return body, nil
}

// DecodeStrict decodes one JSON value from data into v: unknown fields,
// trailing data and type errors are errors.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// DecodeJSON reads a bounded body and decodes it strictly into v. The error
// is a *RequestError (400 or 413).
func DecodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := ReadBody(w, r, limit)
	if err != nil {
		return err
	}
	if err := DecodeStrict(body, v); err != nil {
		return &RequestError{Code: http.StatusBadRequest, Err: fmt.Errorf("bad request: %w", err)}
	}
	return nil
}

// ReplyRequestError answers err with its RequestError code (400 for any
// other error).
func ReplyRequestError(w http.ResponseWriter, err error) {
	code := http.StatusBadRequest
	var re *RequestError
	if errors.As(err, &re) {
		code = re.Code
	}
	ReplyError(w, code, err)
}
