// csr_values_cpms.cu: the CSR kernels (csr.cuh) for values stored in cpms2 and cpms4.
#include "csr.cuh"

MSP__CSR_VALUES(MSP_PRECISION_CPMS2);
MSP__CSR_VALUES(MSP_PRECISION_CPMS4);
