// Package redact is the one redaction of secrets in anything the harness
// writes or serves: command lines recorded in a run directory or a
// manifest, URLs in an agent's info, logs and reports. A secret flag's value
// (--token, --profile-token, any flag whose name says token, password or
// secret) and the password of a URL's user information are replaced by
// Mask; everything else is left as it was, so that a recorded command line
// still says what ran.
//
// It also finds credentials where none may be given (Credentials), so that
// every place a URL is accepted refuses them alike.
package redact
