package driver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/driver"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
)

// withCredentials sets the environment route for the test's length.
func withCredentials(t *testing.T, user, password string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(driver.EnvUser, user)
	t.Setenv(driver.EnvPasswordFile, file)
}

// TestBrokersWithCredentials: a broker that requires a password is reached
// with the environment route, and refuses the client without it; the
// password never shows in an error or the endpoint's description.
func TestBrokersWithCredentials(t *testing.T) {
	const user, password = "cpuser", "pw-9f8e7d6c5b4a"
	natsAddr, _ := realserver.NATS(t, "--user", user, "--pass", password)
	redisAddr, _ := realserver.Redis(t, "--user", user, "on", ">"+password, "~*", "&*", "+@all", "--user", "default", "off")
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", user, password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	endpoints := []string{"nats://" + natsAddr + "/cp.auth", "jetstream://" + natsAddr + "/cp.auth", "redis://" + redisAddr + "/cp.auth", "kafka://" + kc.ListenAddrs()[0] + "/cp.auth"}
	t.Run("without", func(t *testing.T) {
		t.Setenv(driver.EnvUser, "")
		t.Setenv(driver.EnvPasswordFile, "")
		for _, ep := range endpoints {
			e, err := driver.Parse(ep)
			if err != nil {
				t.Fatal(err)
			}
			p, err := brokers.NewProducer(e)
			if err == nil {
				// Kafka's client connects lazily: the first flush fails.
				err = p.Publish([]byte("x"))
				if err == nil {
					err = p.Flush(3e9)
				}
				p.Close()
			}
			if err == nil {
				t.Errorf("%s: a producer without credentials was accepted", ep)
			}
		}
	})
	t.Run("with", func(t *testing.T) {
		withCredentials(t, user, password)
		roundTrip(t, endpoints)
		e, _ := driver.Parse(endpoints[0])
		if s := e.Auth.String() + e.Where(); strings.Contains(s, password) {
			t.Errorf("the endpoint's description shows the password: %s", s)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		withCredentials(t, user, "wrong")
		e, _ := driver.Parse(endpoints[2])
		_, err := brokers.NewConsumer(e)
		if err == nil || strings.Contains(err.Error(), "wrong") {
			t.Errorf("a wrong password: %v", err)
		}
	})
}

func TestCredentialsFromEnv(t *testing.T) {
	t.Setenv(driver.EnvUser, "u")
	t.Setenv(driver.EnvPasswordFile, "/dev/zero")
	if _, err := driver.CredentialsFromEnv(); err == nil {
		t.Error("a device as the password file was read")
	}
	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, make([]byte, 4096+1), 0o600)
	t.Setenv(driver.EnvPasswordFile, big)
	if _, err := driver.CredentialsFromEnv(); err == nil {
		t.Error("a password file above the bound was read")
	}
	t.Setenv(driver.EnvPasswordFile, filepath.Join(t.TempDir(), "missing"))
	if _, err := driver.CredentialsFromEnv(); err == nil || !strings.Contains(err.Error(), driver.EnvPasswordFile) {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := driver.Parse("nats://u:pw@127.0.0.1:4222/s"); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("credentials in the URL: %v", err)
	}
}
