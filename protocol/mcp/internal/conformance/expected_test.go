package conformance

// expectedFailures lists the scenarios that fail today, with why. The test
// fails when one of them passes, so that the list only shrinks: remove a
// scenario from it in the change that makes it pass.
var expectedFailures = map[string]string{}
