"""The peers of `poolir verify`, run in a child process: an engine that crashes costs its path, not the verify.

OpenVINO 2026.4's CPU plugin dies of SIGSEGV on a Slice-8 whose axes are computed, and of SIGFPE on a Slice and a
Gather to an empty tensor; in-process, that killed `poolir verify` with no report at all (exit 136). Here the
engines run in one long-lived child (started on the first peer call, restarted after a crash), and a crash is a
PeerCrash: that path's error row, naming the signal.

Protocol: the parent writes pickled (function, args) to the child's stdin and reads a pickled ("ok", result) or
("error", summary, unsupported) from a pipe of its own (the engines' own prints go to stderr, never into it). Only
numpy arrays, bytes, strings and names cross: ONNX models as their serialised bytes, OpenVINO models as where to
get them, ("xml", path) or ("onnx", bytes), rebuilt in the child. Both ends are poolir's own code.
"""

from __future__ import annotations

import atexit
import os
import pickle
import select
import signal
import subprocess
import sys
from typing import Any, Mapping

import numpy as np


# How long one peer call (load, compile and run one path) may take before the engine is stopped.
TIMEOUT_VARIABLE = "POOLIR_PEER_TIMEOUT"
DEFAULT_PEER_SECONDS = 600.0


def peer_seconds() -> float:
    """The seconds one peer call may take: POOLIR_PEER_TIMEOUT when it is a positive number, else 600."""
    try:
        value = float(os.environ.get(TIMEOUT_VARIABLE, ""))
    except ValueError:
        return DEFAULT_PEER_SECONDS
    return value if 0 < value < float("inf") else DEFAULT_PEER_SECONDS


class PeerFailure(Exception):
    """A peer refused or failed on the model (raised in the child; `summary` is peers.peer_failure_summary's line)."""

    def __init__(self, summary: str, unsupported: bool):
        super().__init__(summary)
        self.summary, self.unsupported = summary, unsupported


class PeerCrash(Exception):
    """The peer's process died while it ran the model."""


class _Child:
    def __init__(self):
        self.process: subprocess.Popen | None = None
        self.replies = None
        self.served = 0  # calls the running child has answered
        self.served_before_crash = 0  # ... when the call under way was made

    def call(self, function: str, *args) -> Any:
        """One peer call. A child that dies on it after serving others is replaced and the call made once more
        in the new one: an engine can leave itself broken for the next model (OpenVINO 2026.4 after it returned
        an empty tensor for a too-short ceil_mode pool), and the crash is then not this path's."""
        try:
            return self._call(function, args)
        except PeerCrash:
            if not self.served_before_crash:
                raise
        return self._call(function, args)

    def _call(self, function: str, args: tuple) -> Any:
        if self.process is None or self.process.poll() is not None:
            self._start()
        self.served_before_crash = self.served
        try:
            pickle.dump((function, args), self.process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.process.stdin.flush()
            limit = peer_seconds()
            if not select.select([self.replies], [], [], limit)[0]:
                self.process.kill()  # a peer stuck on the model (OpenVINO compiling If-8s nested 30 deep)
                self._death()
                self.served_before_crash = 0  # not tried again: it would take as long
                raise PeerCrash(f"the engine did not finish this path in {limit:g} s and was stopped (set "
                                f"{TIMEOUT_VARIABLE} to wait longer)")
            status, *payload = pickle.load(self.replies)
        except (EOFError, BrokenPipeError, pickle.UnpicklingError):
            raise PeerCrash(self._death()) from None
        self.served += 1
        if status == "ok":
            return payload[0]
        raise PeerFailure(*payload)

    def _start(self) -> None:
        read_end, write_end = os.pipe()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in sys.path if path))
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"from poolir.converter.verify.peer_process import serve; serve({write_end})"],
            stdin=subprocess.PIPE, pass_fds=(write_end,), env=env)
        os.close(write_end)
        self.replies = os.fdopen(read_end, "rb")

    def _death(self) -> str:
        code = self.process.wait()
        self.replies.close()
        self.process, self.served = None, 0
        if code < 0:
            try:
                return f"the engine crashed ({signal.Signals(-code).name}) while it ran this path"
            except ValueError:
                pass
        return f"the engine's process ended (exit {code}) while it ran this path"

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait()
            self.replies.close()
            self.process, self.served = None, 0


_CHILD = _Child()
atexit.register(_CHILD.close)


def onnxruntime_run(model, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return _CHILD.call("onnxruntime_run", model.SerializeToString(), dict(feeds))


def onnxruntime_tensors(model, feeds: Mapping[str, np.ndarray], names) -> dict[str, np.ndarray]:
    return _CHILD.call("onnxruntime_tensors", model.SerializeToString(), dict(feeds), list(names))


def openvino_run(source: tuple[str, Any], feeds: Mapping[str, np.ndarray], output_names=()) -> dict[str, np.ndarray]:
    """Run OpenVINO's model of `source`: ("xml", path) an IR file, ("onnx", model) its own conversion of an ONNX."""
    return _CHILD.call("openvino_run", _portable(source), dict(feeds), list(output_names))


def openvino_tensor_names(source: tuple[str, Any]) -> set[str]:
    return _CHILD.call("openvino_tensor_names", _portable(source))


def openvino_tensors(source: tuple[str, Any], feeds: Mapping[str, np.ndarray], names) -> dict[str, np.ndarray]:
    return _CHILD.call("openvino_tensors", _portable(source), dict(feeds), list(names))


def _portable(source: tuple[str, Any]) -> tuple[str, Any]:
    kind, value = source
    return (kind, value.SerializeToString()) if kind == "onnx" else (kind, os.fspath(value))


# --------------------------------------------------------------------------------------------------
# The child


def serve(reply_fd: int) -> None:
    """The child's loop: one call at a time until the parent closes stdin."""
    import onnx

    from poolir.converter import peers

    # Ctrl-C reaches the whole foreground process group: the parent answers it (and its exit closes our stdin);
    # here it would only print a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(reply_fd, "wb")
    os.dup2(2, 1)  # an engine printing to stdout must not reach the parent's terminal as poolir's output

    def ov_model(source):
        kind, value = source
        return peers.openvino_read(value) if kind == "xml" else peers.openvino_convert(onnx.load_from_string(value))

    functions = {
        "onnxruntime_run": lambda model, feeds: peers.onnxruntime_run(onnx.load_from_string(model), feeds),
        "onnxruntime_tensors": lambda model, feeds, names: peers.onnxruntime_tensors(onnx.load_from_string(model),
                                                                                    feeds, names),
        "openvino_run": lambda source, feeds, names: peers.openvino_run_model(ov_model(source), feeds, names),
        "openvino_tensor_names": lambda source: peers.openvino_tensor_names(ov_model(source)),
        "openvino_tensors": lambda source, feeds, names: peers.openvino_tensors(ov_model(source), feeds, names),
    }
    while True:
        try:
            function, args = pickle.load(sys.stdin.buffer)
        except EOFError:  # the parent is done (or gone)
            return
        try:
            reply = ("ok", functions[function](*args))
        except Exception as error:  # noqa: BLE001 - the engine's failure is the parent's finding to report
            engine = "onnxruntime" if function.startswith("onnxruntime") else "openvino"
            reply = ("error", peers.peer_failure_summary(error), peers.unsupported_by_peer(engine, error))
        try:
            pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
            replies.flush()
        except BrokenPipeError:  # the parent stopped listening (interrupted): nothing to report to
            return
