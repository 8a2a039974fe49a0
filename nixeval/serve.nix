# A worker: one long-lived `nix eval` that evaluates task after task, so
# that nix starts once per worker instead of once per node, and what the
# tasks share (nixpkgs' lib, a flake and its inputs) is evaluated once.
#
# request (request.json beside this file): what extract.nix and locate.nix
# take, and answerMark, the word before each answer.
#
# Tasks come from the worker's folder ($PODROLES_WORKER_DIR), one at a
# time: podroles writes task-N.json, then opens the FIFO bell-N for writing.
# builtins.readFile of bell-N blocks in open(2) until then (nix 2.8 reads to
# the end, nix 2.24 reads nothing: both wait), so nix reads task-N.json
# only once it is whole. Each bell is used once: a second open of the same
# FIFO could pass while podroles still holds the first. The answer is one
# line on stderr, `trace: MARK {"task":N,"value":...}` (toJSON writes no
# newline); a task that fails stops nix with its error, exactly as a single
# `nix eval` prints it, and podroles starts another worker for what is left.
#
# The loop is builtins.genericClosure: nix runs it as a loop, not a
# recursion, so a worker serves any number of tasks in constant stack. Task
# N is read by the operator and answered when the key of the item it
# returns is forced; the task { op = "stop"; } ends the closure and nix
# exits.
#
# TASK = { op = "list"; source = I; }                 the node names of a flake
#      | { op = "node"; source = I; attr = "web" or null; }   a node's facts
#      | { op = "locate"; node = { source; attr; onK8sPod; readModules; queries; }; }
#      | { op = "stop"; }
request:
let
  extract = import ./extract.nix request;
  locate = import ./locate.nix request;
  dir = /. + builtins.getEnv "PODROLES_WORKER_DIR";

  task = n:
    let bell = builtins.readFile (dir + "/bell-${toString n}");
    in builtins.fromJSON (builtins.seq bell (builtins.readFile (dir + "/task-${toString n}.json")));

  valueOf = t:
    if t.op == "list" then extract.names t.source
    else if t.op == "node" then extract.node t.source t.attr
    else if t.op == "locate" then locate.answer t.node
    else throw "podroles: unknown task ${t.op}";

  answer = n: t: builtins.trace "${request.answerMark} ${builtins.toJSON { task = n; value = valueOf t; }}" null;
in
builtins.length (builtins.genericClosure {
  startSet = [ { key = 0; } ];
  operator = item:
    let t = task item.key; in
    if t.op == "stop" then [ ]
    else [ { key = builtins.seq (answer item.key t) (item.key + 1); } ];
})
