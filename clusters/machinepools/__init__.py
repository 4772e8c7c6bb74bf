"""Machine pools: the machines beneath a backend's nodes, as ROSA and Karpenter provision them.

- `spec`: the pure description of a machine pool (no Django, no I/O): what a provider is asked for and
  what its nodes look like (labels, taints, shape).
- `catalog`: the instance-type catalog shipped in the repository (`instance_types.json`), pure.
"""
