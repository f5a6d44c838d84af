"""Fault-injection lab: real torch.distributed (gloo, CPU) runs with injected faults and ground truth.

See ``eval/lab/README.md`` for the scenario format and the capture formats.
"""
