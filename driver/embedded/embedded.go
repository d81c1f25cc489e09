package embedded

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is a running in-process NATS server.
type Server struct {
	srv         *server.Server
	store, addr string
}

// Start runs a server with JetStream on a free loopback port.
func Start() (*Server, error) {
	store, err := os.MkdirTemp("", "cp-nats-*")
	if err != nil {
		return nil, fmt.Errorf("JetStream store: %w", err)
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: store, NoLog: true, NoSigs: true})
	if err != nil {
		os.RemoveAll(store)
		return nil, fmt.Errorf("NATS server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		os.RemoveAll(store)
		return nil, fmt.Errorf("the NATS server did not start within 10s")
	}
	return &Server{srv: srv, store: store, addr: srv.Addr().String()}, nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Version is the server's version.
func (s *Server) Version() string { return server.VERSION }

// Close stops the server and removes its store.
func (s *Server) Close() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	os.RemoveAll(s.store)
}
