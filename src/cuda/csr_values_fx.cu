// csr_values_fx.cu: the CSR kernels (csr.cuh) for values stored in fx32 and fx16.
#include "csr.cuh"

MSP__CSR_VALUES(MSP_PRECISION_FX32);
MSP__CSR_VALUES(MSP_PRECISION_FX16);
