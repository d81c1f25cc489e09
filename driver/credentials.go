package driver

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// The environment route for a broker's credentials. A URL never carries
// them (Parse refuses it): URLs are recorded in run directories, manifests
// and an agent's /v1/info. The password comes from a file, so that it is in
// neither the process arguments nor its environment.
const (
	EnvUser         = "CP_BROKER_USER"
	EnvPasswordFile = "CP_BROKER_PASSWORD_FILE"
)

// maxPasswordBytes bounds the password file's read.
const maxPasswordBytes = 4096

// Credentials are a broker's user name and password (both empty: none).
type Credentials struct {
	User, Password string
}

// String never shows the password.
func (c Credentials) String() string {
	if c.User == "" && c.Password == "" {
		return "none"
	}
	return fmt.Sprintf("user %q, password from $%s", c.User, EnvPasswordFile)
}

// CredentialsFromEnv reads CP_BROKER_USER and the file CP_BROKER_PASSWORD_FILE
// names (its trailing newline dropped). Neither set: no credentials.
func CredentialsFromEnv() (Credentials, error) {
	c := Credentials{User: os.Getenv(EnvUser)}
	file := os.Getenv(EnvPasswordFile)
	if file == "" {
		return c, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return Credentials{}, fmt.Errorf("broker credentials: $%s: %w", EnvPasswordFile, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return Credentials{}, fmt.Errorf("broker credentials: $%s (%s) is not a regular file", EnvPasswordFile, file)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPasswordBytes+1))
	if err != nil {
		return Credentials{}, fmt.Errorf("broker credentials: read $%s: %w", EnvPasswordFile, err)
	}
	if len(data) > maxPasswordBytes {
		return Credentials{}, fmt.Errorf("broker credentials: $%s (%s) is above %d bytes", EnvPasswordFile, file, maxPasswordBytes)
	}
	c.Password = string(bytes.TrimRight(data, "\r\n"))
	return c, nil
}
