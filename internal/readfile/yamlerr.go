package readfile

import (
	"fmt"
	"regexp"
	"strings"
)

var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// YAMLError says what is wrong in a YAML file that the decoder refused,
// by line number and kind of fault, never with the file's text: the file
// a setting names may be any file of the user's (a --profile that is
// /etc/shadow would print its lines as "unknown fields").
func YAMLError(err error) error {
	var faults []string
	for _, line := range strings.Split(err.Error(), "\n") {
		m := yamlLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		faults = append(faults, "line "+m[1]+": "+yamlFault(m[2]))
		if len(faults) == 5 {
			faults = append(faults, "...")
			break
		}
	}
	if len(faults) == 0 {
		return fmt.Errorf("not a YAML document of the settings expected (its text is not shown)")
	}
	return fmt.Errorf("%s (the file's text is not shown)", strings.Join(faults, "; "))
}

// yamlFault names the kind of a decoder's fault, without its text.
func yamlFault(msg string) string {
	switch {
	case strings.Contains(msg, "not found in type"):
		return "an unknown setting"
	case strings.Contains(msg, "cannot unmarshal"):
		return "a value of the wrong kind"
	case strings.Contains(msg, "already set") || strings.Contains(msg, "already defined"):
		return "a setting given twice"
	}
	return "not valid YAML"
}
