"""The cluster adapter: the only code that imports the `kubernetes` client.

`connection` (the one ApiClient factory, per Backend), `errors` (KubeError: one line, transient or not),
`inventory` (paginated node/pod lists, watch streams, plain records), `probe` ("test connection"),
`kubeconfig` (checks kubeconfig content without the client), `pods` (workflow pods), `custom` (custom
resources: the schedulers' queues), `nodes` (the node-pool labels those schedulers select nodes by).
"""
