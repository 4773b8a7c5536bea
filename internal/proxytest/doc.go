// Package proxytest is a forward HTTP proxy on 127.0.0.1 for the tests of
// the tools that can send their requests through one.
package proxytest
