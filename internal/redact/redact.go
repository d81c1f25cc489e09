package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "REDACTED"

// secretFlag says whether a flag's name (without dashes) names a secret.
// --token-file and the like name a file, not a secret, and stay.
func secretFlag(name string) bool {
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "-file") || strings.HasSuffix(n, "_file") {
		return false
	}
	for _, w := range []string{"token", "password", "passwd", "secret", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Args returns a copy of a command line with the values of secret flags
// (both "--flag value" and "--flag=value") and the passwords of URLs
// masked. Flags after a bare "--" are read the same way, since a command
// (cpsweep demo, deploy kubernetes) passes them on to another.
func Args(args []string) []string {
	out := make([]string, len(args))
	maskNext := false
	for i, a := range args {
		switch {
		case maskNext:
			out[i], maskNext = Mask, false
			continue
		case strings.HasPrefix(a, "-") && a != "-" && a != "--":
			name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if secretFlag(name) {
				if hasValue {
					out[i] = a[:len(a)-len(value)] + Mask
				} else {
					out[i], maskNext = a, true
				}
				continue
			}
		}
		out[i] = Text(a)
	}
	return out
}

// userinfo matches the user information of a URL inside any text:
// SCHEME://USER[:PASSWORD]@.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)([^/@\s?#]*)@`)

// Text masks the user information of every URL in s (the user name too: a
// token is sometimes given as one) and the values of query parameters that
// name secrets.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	if !strings.Contains(s, "?") {
		return s
	}
	return secretQuery.ReplaceAllStringFunc(s, func(m string) string {
		k, _, _ := strings.Cut(m, "=")
		return k + "=" + Mask
	})
}

// secretQuery matches a query parameter whose name says it is a secret.
var secretQuery = regexp.MustCompile(`(?i)[?&][a-z_.-]*(token|password|passwd|secret|credential|sasl)[a-z_.-]*=[^&\s#]*`)

// URL masks a URL's credentials (see Text).
func URL(s string) string { return Text(s) }

// Credentials says whether s holds a URL with user information or a query
// parameter that names a secret, which every place that accepts a URL
// refuses: endpoints and command lines are written to run directories,
// manifests and logs.
func Credentials(s string) bool {
	return Text(s) != s
}

// CheckURL is the refusal every URL-accepting place gives: nil, or an
// error that says where credentials may come from instead.
func CheckURL(what, s string) error {
	if !Credentials(s) {
		return nil
	}
	where := Text(s)
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		where = u.Scheme + "://" + u.Host + u.Path
	}
	return &CredentialsError{What: what, Where: where}
}

// CredentialsError is a URL that carries credentials.
type CredentialsError struct{ What, Where string }

func (e *CredentialsError) Error() string {
	return e.What + " " + e.Where + ": credentials in a URL are refused, since URLs are written to run directories, manifests and logs; give a broker's user and password through CP_BROKER_USER and CP_BROKER_PASSWORD_FILE (docs/security.md)"
}

// All masks the credentials of every string of ss (Text), in a copy.
func All(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Text(s)
	}
	return out
}
