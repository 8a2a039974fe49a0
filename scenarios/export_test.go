package scenarios

// PodExec is podExec, for the package's tests against real pods.
var PodExec = podExec
