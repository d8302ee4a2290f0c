// Package sdkbody keeps the AWS SDK from sending a call twice when it
// closes a request body early (see Guard). Every AWS client heddle makes
// goes through it: the Lambdas' (internal/assemble), the emulator clients
// of the tests and the EC2 provider's.
package sdkbody
