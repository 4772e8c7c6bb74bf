# Seed 004's "Example: Batch Workload Isolation" taint (written with schedule_type, the ROSA Terraform
# provider's word) in a call of the module, with the pool's size from variables with defaults.
variable "batch_max" {
  type    = number
  default = 8
}

variable "team" {
  default = "data-engineering"
}

module "batch" {
  source = "./modules/machine-pools"

  cluster_id = "27h3k9q2v8m4n1p6r5s0t7u3w2x9y4z1"

  create_additional_pool       = true
  additional_pool_name         = "batch"
  additional_pool_max_replicas = var.batch_max

  additional_pool_labels = {
    "workload-type" = "batch"
    team            = "${var.team}"
  }

  additional_pool_taints = [
    {
      key           = "workload-type"
      value         = "batch"
      schedule_type = "NoSchedule"
    }
  ]
}
