// Package layers holds no code: its test keeps the layering drawn in
// docs/architecture.md. It lists every package of the module with go list
// and fails naming each import that goes up the layers, so a package may
// import only packages of its own layer or of layers below it.
package layers
