# Seed 004, usage example "Both Pools" (verbatim).
module "machine_pools" {
  source = "./modules/machine-pools"

  cluster_id = module.rosa_cluster.cluster_id

  # Additional worker pool
  create_additional_pool        = true
  additional_pool_name          = "compute"
  additional_pool_instance_type = "c5.2xlarge"
  additional_pool_min_replicas  = 1
  additional_pool_max_replicas  = 20
  
  # GPU spot pool
  create_gpu_spot_pool          = true
  gpu_spot_pool_instance_type   = "g4dn.xlarge"
  gpu_spot_pool_max_replicas    = 3
}
