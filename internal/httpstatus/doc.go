// Package httpstatus classifies the HTTP statuses of the services tools
// call.
package httpstatus
