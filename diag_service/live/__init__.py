"""Live governance: node agents beside running jobs (``diag watch``) and what they send to the service.

``contract``: the batch an agent sends and the service's answer; ``agent``: the node agent.
"""
