package httpstatus

import "net/http"

// Transient reports whether a request answered with status code may succeed
// if sent again: 408 Request Timeout, 429 Too Many Requests and the 5xx
// server errors.
func Transient(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}
