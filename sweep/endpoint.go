package sweep

import (
	"fmt"
	"net"
	"net/url"

	"github.com/cloudprofiler-go/cp/driver"
)

// resolveEndpoint turns a bound endpoint like tcp://*:5555 into one a
// sender can connect to, using the host the agent was reached at.
func resolveEndpoint(ep, agentAddr string) (string, error) {
	if driver.IsBroker(ep) { // the broker's own address, the same for everyone
		return ep, nil
	}
	u, err := url.Parse(ep)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("receiver endpoint %q is not a URL like tcp://host:port", ep)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return "", fmt.Errorf("receiver endpoint %q: %w", ep, err)
	}
	if port == "*" || port == "0" {
		return "", fmt.Errorf("receiver endpoint %q has no fixed port: start the agent with --bind tcp://*:PORT", ep)
	}
	if host == "*" || host == "0.0.0.0" || host == "" {
		agentHost, _, err := net.SplitHostPort(agentAddr)
		if err != nil {
			return "", err
		}
		host = agentHost
	}
	return u.Scheme + "://" + net.JoinHostPort(host, port), nil
}
