package deploy

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cloudprofiler-go/cp/internal/atomicfile"
)

// NewToken makes the agents' shared secret: 32 random bytes, base64.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b[:]), nil
}

// Write puts the files in dir (created if needed). A file already there
// is an error unless force: a second deploy must not replace a first
// one's token unnoticed. Each file is written whole or not at all.
func Write(dir string, files []File, force bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if !force {
		var there []string
		for _, f := range files {
			if _, err := os.Lstat(filepath.Join(dir, f.Name)); err == nil {
				there = append(there, f.Name)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if len(there) > 0 {
			return fmt.Errorf("%s already holds %s: give another --out, or --force to replace them (a new token too)", dir, strings.Join(there, ", "))
		}
	}
	for _, f := range files {
		if err := atomicfile.Write(filepath.Join(dir, f.Name), f.Data, fs.FileMode(f.Mode)); err != nil {
			return err
		}
	}
	return nil
}

// SplitSecret separates the Secret's file from the others.
func SplitSecret(files []File) (secret, rest []File) {
	for _, f := range files {
		if f.Secret {
			secret = append(secret, f)
		} else {
			rest = append(rest, f)
		}
	}
	return secret, rest
}

// DefaultSecretDir is where the Secret's file goes unless told otherwise:
// a private folder under the user's configuration directory, never the
// working tree, one for each manifests' folder (out): a second deploy into
// another --out is another deployment, whose Secret must not collide with
// the first's (it did, and another --out did not help).
func DefaultSecretDir(t Topology, out string) (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no folder for the Secret (%v): give --secret-out", err)
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", fmt.Errorf("--out %s: %w", out, err)
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(base, "cp", "deploy", fmt.Sprintf("%s-%s-%x", t.Namespace, t.Name, sum[:4])), nil
}

// NextSteps is what to type after the files are written; secretFile is
// where the Secret's manifest went ("" when none was written).
func NextSteps(t Topology, dir, secretFile string) string {
	ns, job := t.Namespace, t.Name+"-sweep"
	apply := dir
	if secretFile != "" {
		// the namespace first, then the Secret the pods mount, then the rest
		apply = filepath.Join(dir, "00-namespace.yaml") + " -f " + secretFile + " -f " + dir
	}
	return fmt.Sprintf(`next:
  kubectl apply -f %[6]s
  kubectl -n %[2]s get pods -w                      # the agents become ready, then the sweep starts
  kubectl -n %[2]s logs -f job/%[3]s                 # the sweep's progress and answer
  kubectl -n %[2]s cp $(kubectl -n %[2]s get pod -l job-name=%[3]s -o jsonpath='{.items[0].metadata.name}'):%[4]s ./runs
                                                   # within %[5]v of the sweep's end (the pod waits that long)
  kubectl delete -f %[1]s                           # everything, the volume with the runs too
`, dir, ns, job, RunsDir, t.Hold, apply)
}
