// Package deadline tells whether a context's deadline has passed, which the
// context itself reports only once its timer has fired.
package deadline
