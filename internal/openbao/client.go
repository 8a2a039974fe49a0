// Package openbao speaks the part of the HTTP API that OpenBao and Vault
// share. It covers KV v2, the database and PKI engines, and sys/. The
// local environment configures its server with it, and the suites read
// what the sidecars should have written. Plain net/http: the API is a
// few JSON calls.
package openbao

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client calls one server with one token.
type Client struct {
	// Addr is the server's base URL, e.g. http://127.0.1.30:8200.
	Addr  string
	Token string
	HTTP  *http.Client
}

// New returns a client of addr with token.
func New(addr, token string) *Client {
	// Never through a proxy: the token is sent with each call.
	return &Client{Addr: strings.TrimSuffix(addr, "/"), Token: token, HTTP: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{Proxy: nil}}}
}

// Error is a call the server refused.
type Error struct {
	Method, Path string
	Status       int
	Errors       []string
}

func (e *Error) Error() string {
	return fmt.Sprintf("openbao %s /v1/%s: HTTP %d: %s", e.Method, e.Path, e.Status, strings.Join(e.Errors, "; "))
}

// Do calls method on path (under /v1/) with body as JSON, and decodes the
// response's JSON into out when out is not nil.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Addr+"/v1/"+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("X-Vault-Token", c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("openbao %s /v1/%s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Errors []string `json:"errors"`
		}
		json.Unmarshal(data, &e)
		return &Error{Method: method, Path: path, Status: resp.StatusCode, Errors: e.Errors}
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("openbao %s /v1/%s: %w", method, path, err)
		}
	}
	return nil
}

// Write is a POST of data to path.
func (c *Client) Write(ctx context.Context, path string, data any) error {
	return c.Do(ctx, http.MethodPost, path, data, nil)
}

// Secret is a response with data, as a read returns it.
type Secret struct {
	Data          map[string]any `json:"data"`
	LeaseID       string         `json:"lease_id"`
	LeaseDuration int            `json:"lease_duration"`
}

// Read reads path; for an engine that issues a value at each read (the
// database and PKI engines), params are sent with it (a POST for PKI).
func (c *Client) Read(ctx context.Context, path string, params map[string]any) (*Secret, error) {
	var s Secret
	method := http.MethodGet
	var body any
	if len(params) > 0 {
		method, body = http.MethodPost, params
	}
	if err := c.Do(ctx, method, path, body, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// KV reads the data of a KV v2 entry at its full path (secret/data/x).
func (c *Client) KV(ctx context.Context, path string) (map[string]any, error) {
	s, err := c.Read(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	data, _ := s.Data["data"].(map[string]any)
	if data == nil {
		return nil, fmt.Errorf("openbao %s: no KV v2 data (is it the full path, secret/data/...?)", path)
	}
	return data, nil
}

// KVWritten is when the current version of a KV v2 entry was written, as
// the entry's metadata says.
func (c *Client) KVWritten(ctx context.Context, path string) (time.Time, error) {
	s, err := c.Read(ctx, path, nil)
	if err != nil {
		return time.Time{}, err
	}
	meta, _ := s.Data["metadata"].(map[string]any)
	created, _ := meta["created_time"].(string)
	t, err := time.Parse(time.RFC3339Nano, created)
	if err != nil {
		return time.Time{}, fmt.Errorf("openbao %s: no created_time in the KV v2 metadata (%q)", path, created)
	}
	return t, nil
}
