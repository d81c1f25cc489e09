package embedded

import (
	"net"
	"os"
	"testing"
)

func TestStartServesAndCleansUp(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatalf("dial %s: %v", s.Addr(), err)
	}
	c.Close()
	store := s.store
	s.Close()
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("the store %s is still there: %v", store, err)
	}
	if _, err := net.Dial("tcp", s.Addr()); err == nil {
		t.Error("the server still answers after Close")
	}
}
