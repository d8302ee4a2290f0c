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
// The tests need neither AWS nor Docker; the package has no other code.
package infra
