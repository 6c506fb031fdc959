// csr_values_f32.cu: the CSR kernels (csr.cuh) for values stored in f32.
#include "csr.cuh"

MSP__CSR_VALUES(MSP_PRECISION_F32);
