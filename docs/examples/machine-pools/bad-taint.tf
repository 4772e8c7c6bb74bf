# A taint as seed 004's "Batch Workload Isolation" writes it (schedule_type), with an effect Kubernetes lacks.
module "machine_pools" {
  source = "./modules/machine-pools"

  cluster_id = module.rosa_cluster.cluster_id

  create_additional_pool = true
  additional_pool_name   = "batch-workers"

  additional_pool_taints = [
    {
      key           = "workload-type"
      value         = "batch"
      schedule_type = "Sometimes"
    }
  ]
}
