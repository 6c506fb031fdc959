// csr_values_f64.cu: the CSR kernels (csr.cuh) for values stored in f64.
#include "csr.cuh"

MSP__CSR_VALUES(MSP_PRECISION_F64);
