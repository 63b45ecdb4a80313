package server

import "net/http"

// Server serves the API.
type Server struct {
	addr string
}

const defaultAddr = ":8080"

// New returns a server on addr.
func New(addr string) *Server {
	return &Server{addr: addr}
}

// ServeHTTP answers every request with 200.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
}

type Handler interface {
	Handle() error
}
