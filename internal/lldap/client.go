// Package lldap speaks the part of lldap's HTTP API that this project
// uses. It covers the simple login, which gives a token, and GraphQL
// with that token as bearer. The local environment provisions lldap with
// it, and the lldap-http suite logs in and asks. Plain net/http: a few
// JSON calls. Written against lldap's schema.graphql and login handler;
// this project's machines cannot run lldap, so CI has never called a
// real one.
package lldap

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

// Client calls one lldap server.
type Client struct {
	// Addr is the server's base URL, e.g. http://127.0.1.1:17170.
	Addr string
	HTTP *http.Client
}

// New returns a client of addr.
func New(addr string) *Client {
	// Never through a proxy: passwords and tokens are sent.
	return &Client{Addr: strings.TrimSuffix(addr, "/"), HTTP: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}}
}

// Error is a call the server refused, or answered without what was asked.
type Error struct {
	Path   string
	Status int
	// Message is the first GraphQL error, or what the answer lacked.
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("lldap %s: HTTP %d", e.Path, e.Status)
	}
	return fmt.Sprintf("lldap %s: HTTP %d: %s", e.Path, e.Status, e.Message)
}

// Login logs user in and returns the token.
func (c *Client) Login(ctx context.Context, user, password string) (string, error) {
	var out struct {
		Token string `json:"token"`
	}
	const path = "/auth/simple/login"
	status, err := c.post(ctx, path, "", map[string]string{"username": user, "password": password}, &out)
	if err != nil {
		return "", err
	}
	if out.Token == "" {
		return "", &Error{Path: path, Status: status, Message: "no token"}
	}
	return out.Token, nil
}

// GraphQL runs query with vars and token, and decodes its data into out
// when out is not nil. lldap answers a query's error with a 400 that says
// it, or a 200 with errors: either is an *Error with the first message.
func (c *Client) GraphQL(ctx context.Context, token, query string, vars map[string]any, out any) error {
	var resp struct {
		Data json.RawMessage `json:"data"`
	}
	const path = "/api/graphql"
	if _, err := c.post(ctx, path, token, map[string]any{"query": query, "variables": vars}, &resp); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Data, out); err != nil {
		return fmt.Errorf("lldap %s: %w", path, err)
	}
	return nil
}

// post posts body as JSON, with token as bearer if given, and decodes the
// answer into out; an answer that is not a 200, or has GraphQL errors, is
// an *Error.
func (c *Client) post(ctx context.Context, path, token string, body, out any) (int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Addr+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, fmt.Errorf("lldap %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	json.Unmarshal(data, &e)
	if resp.StatusCode != http.StatusOK || len(e.Errors) > 0 {
		le := &Error{Path: path, Status: resp.StatusCode}
		if len(e.Errors) > 0 {
			le.Message = e.Errors[0].Message
		}
		return resp.StatusCode, le
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, fmt.Errorf("lldap %s: %w", path, err)
	}
	return resp.StatusCode, nil
}
