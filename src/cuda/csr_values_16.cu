// csr_values_16.cu: the CSR kernels (csr.cuh) for values stored in f16 and bf16.
#include "csr.cuh"

MSP__CSR_VALUES(MSP_PRECISION_F16);
MSP__CSR_VALUES(MSP_PRECISION_BF16);
