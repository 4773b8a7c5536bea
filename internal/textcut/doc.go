// Package textcut shortens text for messages, errors and previews without
// splitting a UTF-8 sequence.
package textcut
