package redact

import (
	"strings"
	"testing"
)

func TestArgs(t *testing.T) {
	cases := []struct {
		name string
		in   []string
		want []string
	}{
		{"token flag with a separate value", []string{"cpsweep", "--token", "s3cr3t-0123456789", "--rate", "1M"}, []string{"cpsweep", "--token", Mask, "--rate", "1M"}},
		{"token flag with =", []string{"cpsweep", "--token=s3cr3t-0123456789"}, []string{"cpsweep", "--token=" + Mask}},
		{"profile token", []string{"dgsend", "--profile-token", "abc", "--profile", "http://h:1/cfg"}, []string{"dgsend", "--profile-token", Mask, "--profile", "http://h:1/cfg"}},
		{"a file route stays", []string{"cpsweep", "--token-file", "/root/.cp-token"}, []string{"cpsweep", "--token-file", "/root/.cp-token"}},
		{"password in a URL", []string{"cpsweep", "--sut", "nats://u:pw@127.0.0.1:4222/s"}, []string{"cpsweep", "--sut", "nats://" + Mask + "@127.0.0.1:4222/s"}},
		{"after --", []string{"cpsweep", "deploy", "kubernetes", "--", "--token", "x", "--sut=redis://:pw@h:6379/k"}, []string{"cpsweep", "deploy", "kubernetes", "--", "--token", Mask, "--sut=redis://" + Mask + "@h:6379/k"}},
		{"secret query parameter", []string{"--profile", "http://h:1/cfg?access_token=abc&x=1"}, []string{"--profile", "http://h:1/cfg?access_token=" + Mask + "&x=1"}},
		{"short flag and plain words", []string{"-v", "report", "--rate", "2M"}, []string{"-v", "report", "--rate", "2M"}},
		{"a secret flag last, without its value", []string{"--token"}, []string{"--token"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Args(c.in)
			if strings.Join(got, "\x00") != strings.Join(c.want, "\x00") {
				t.Fatalf("Args(%q) = %q, want %q", c.in, got, c.want)
			}
			for _, a := range got {
				for _, secret := range []string{"s3cr3t", ":pw@", "abc"} {
					if strings.Contains(a, secret) {
						t.Fatalf("%q still holds %q", a, secret)
					}
				}
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	cases := []struct {
		in      string
		refused bool
	}{
		{"nats://127.0.0.1:4222/s", false},
		{"tcp://127.0.0.1:5555", false},
		{"nats://u:pw@127.0.0.1:4222/s", true},
		{"redis://:pw@127.0.0.1:6379/k", true},
		{"kafka://user@127.0.0.1:9092/t", true},
		{"http://h:1/cfg?token=abc", true},
		{"tcp://*:5555", false},
		{"ipc:///tmp/x@y", false},
	}
	for _, c := range cases {
		err := CheckURL("--sut", c.in)
		if (err != nil) != c.refused {
			t.Errorf("CheckURL(%q) = %v, refused want %v", c.in, err, c.refused)
		}
		if err != nil && (strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "abc")) {
			t.Errorf("the refusal repeats the secret: %v", err)
		}
	}
}

func FuzzText(f *testing.F) {
	f.Add("nats://u:pw@h:1/s")
	f.Add("x http://a@b?token=1&y=2")
	f.Fuzz(func(t *testing.T, s string) {
		r := Text(s)
		if Text(r) != r {
			t.Fatalf("Text is not idempotent on %q: %q then %q", s, r, Text(r))
		}
		if Credentials(r) {
			t.Fatalf("%q still has credentials after redaction (%q)", r, s)
		}
	})
}
