// Package bytesize writes sizes in bytes for people, as the tools' messages
// and descriptions show them.
package bytesize
