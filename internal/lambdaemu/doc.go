// Package lambdaemu runs Lambda functions' bootstrap binaries on this
// machine the way the Lambda service runs a provided.al2023 function, so
// that heddle's three functions can be tested process for process without
// Docker or an AWS account (make local-aws, cmd/heddle-local-aws).
//
// A Pool is one function. Each execution environment is one process of the
// function's binary with its own Runtime API server (the documented
// /2018-06-01 API: runtime/invocation/next, .../{id}/response,
// .../{id}/error and runtime/init/error, with the Lambda-Runtime-* headers,
// Lambda-Runtime-Deadline-Ms among them) on a loopback port of its own,
// named to the process by AWS_LAMBDA_RUNTIME_API as Lambda does. An
// environment runs one invocation at a time; a Pool starts a new one (a
// cold start, counted) whenever every live one is busy, up to the
// function's concurrency limit, and reuses idle ones (warm starts) first.
//
// What Lambda does to a misbehaving environment, a Pool does too: an
// invocation past the function's timeout is answered as a timeout and its
// process is killed; a process that exits (a crash, kill -9) fails the
// invocation it was running with Runtime.ExitError and is never reused; an
// init error fails the invocation that started the environment; an answer
// over 6 MB is refused with Function.ResponseSizeTooLarge. The next
// invocation then starts a fresh process.
//
// The bundled aws-lambda-runtime-interface-emulator was considered and not
// used: the Go module proxy serves it only as a pseudo-version whose code is
// all under internal/ (no library), and one of its processes hosts exactly
// one environment on a fixed Runtime API port (127.0.0.1:9001 unless told
// otherwise), so concurrent environments and parallel tests would need
// probed ports and one extra process per environment, and it reports
// neither cold starts nor billed time except in log lines.
package lambdaemu
