# Seed 004, usage example "GPU Spot Pool for ML Training" (verbatim).
module "machine_pools" {
  source = "./modules/machine-pools"

  cluster_id = module.rosa_cluster.cluster_id

  # Enable GPU spot pool
  create_gpu_spot_pool          = true
  gpu_spot_pool_name            = "ml-training"
  gpu_spot_pool_instance_type   = "p3.2xlarge"  # 1x V100 GPU
  gpu_spot_pool_min_replicas    = 0             # Scale to zero
  gpu_spot_pool_max_replicas    = 5
  gpu_spot_pool_disk_size       = 500           # For model storage
  
  gpu_spot_pool_labels = {
    "ml-framework" = "pytorch"
  }
}
