// Package pause holds the context-aware sleep that retry and backoff loops
// across the module share.
package pause
