# Seed 004, usage example "Basic Additional Pool" (verbatim).
module "machine_pools" {
  source = "./modules/machine-pools"

  cluster_id = module.rosa_cluster.cluster_id

  # Enable additional worker pool
  create_additional_pool        = true
  additional_pool_name          = "batch-workers"
  additional_pool_instance_type = "m5.2xlarge"
  additional_pool_min_replicas  = 2
  additional_pool_max_replicas  = 10
  
  additional_pool_labels = {
    "workload-type" = "batch"
    "team"          = "data-engineering"
  }
  
  additional_pool_taints = [
    {
      key    = "workload-type"
      value  = "batch"
      effect = "NoSchedule"
    }
  ]
}
