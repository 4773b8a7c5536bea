// Package modelmw holds the tests of Trellis's model/modelmw package that
// need more than modelmw itself: retries and fallbacks against the OpenAI
// and Anthropic providers speaking to test servers, telemetry recorded
// with the OpenTelemetry SDK, and trimming by the offline token counter
// of model/openai/tokens. They live here, in the integration tests, so
// that a module requiring modelmw (as agent does) does not take the
// providers' SDKs into its go.sum. It has no code of its own.
package modelmw
