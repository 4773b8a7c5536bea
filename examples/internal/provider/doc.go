// Package provider picks the model the examples run on: a real provider when
// its environment variables are set, else nothing (the examples then use
// their scripted models and run offline).
package provider
