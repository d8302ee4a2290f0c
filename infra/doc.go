// Package infra holds heddle's deployment pieces that are not the main SAM
// template: the Fargate worker's Dockerfile and stack (fargate.yaml), and
// the IAM notes in README.md. Its tests read template.yaml and fargate.yaml
// as YAML with their CloudFormation tags (!Ref, !GetAtt, !Sub, ...) and
// check what a deploy would otherwise find late or never:
//
//   - every function's code is a functions/<name>/main.go that `sam build`
//     reaches (BuildMethod makefile: a build-<LogicalId> target that
//     builds ./functions/<name>), and it compiles;
//   - every function runs provided.al2023 on arm64 with the bootstrap
//     handler;
//   - every !Ref, !GetAtt, ${...} in !Sub and condition name resolves to
//     a parameter, resource, condition or pseudo parameter;
//   - no IAM policy allows a wildcard action ("*" or "service:*") on every
//     resource ("*"), and a resource policy that names every principal has
//     a condition;
//   - the table has the layout internal/store/dynamostore creates, and the
//     LocalStack init hook creates the same one.
//
// TestStackOnMoto deploys the stack: template.yaml through aws-sam-translator
// (the SAM transform CloudFormation runs; scripts/sam-translate.py) into a
// moto_server of its own (internal/motoserver) by scripts/moto-stack.py,
// and checks every resource, output and function environment there. It
// holds each function's deployed role against FunctionCalls (awscalls.go),
// the table of the AWS calls heddle's code makes per function: every call
// allowed, every granted action one of them, no wildcard action, and
// resources named or scoped (the stage's queue prefix, a condition).
//
// The tests need neither AWS nor Docker; moto and aws-sam-translator are
// Python packages (CI's image has them). The package's only code is the
// call table.
package infra
