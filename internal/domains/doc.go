// Package domains holds the domain-name rules of the tools that filter by
// host (web fetch, web search): how a host and a listed domain are spelled
// for comparison, and when a host falls under a domain.
package domains
