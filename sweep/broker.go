package sweep

import (
	"errors"
	"fmt"

	"github.com/cloudprofiler-go/cp/rundir"
)

// A broker between the senders and the receivers (package driver) is the
// system under test: its failure is read from the agents' results here
// (its name in the diagnosis: package rundiag).

// systemFailure is the system under test's failure reported by any agent
// (a broker gone mid-trial): the trial is invalid, never a failed rate.
func systemFailure(o *rundir.Outcome) error {
	var all []string
	for _, s := range o.Senders {
		if s != nil {
			all = append(all, s.SystemFailures...)
		}
	}
	for _, r := range o.Receivers {
		if r != nil {
			all = append(all, r.SystemFailures...)
		}
	}
	if len(all) == 0 {
		return nil
	}
	msg := all[0]
	if len(all) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(all)-1)
	}
	return &AgentError{Agent: "the system under test", Err: errors.New(msg), System: true}
}
