package cli

import (
	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/internal/redact"
)

// RefuseCredentials is the one check, run before any command, that no flag
// value and no argument (those after "--" included, which cpsweep passes on
// to another command or writes into a manifest) holds a URL with
// credentials: every command line is recorded somewhere (config.json, a
// Job's manifest, an agent's /v1/info, the logs). Broker credentials come
// from CP_BROKER_USER and CP_BROKER_PASSWORD_FILE instead.
func RefuseCredentials(fs *pflag.FlagSet, args []string) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		values := []string{f.Value.String()}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			if e := redact.CheckURL("--"+f.Name, v); e != nil {
				err = e
				return
			}
		}
	})
	if err != nil {
		return err
	}
	for _, a := range args {
		if e := redact.CheckURL("argument", a); e != nil {
			return e
		}
	}
	return nil
}
