// cmd_devices.c: `mixsparse devices`: the CUDA devices and the facts the formats are tuned by.
#include "cmd.h"
#include "common.h"

static const char *devices_help =
    "usage: mixsparse devices [--json]\n"
    "  List the CUDA devices with the facts of the PSBLAS GPU environment routines\n"
    "  (SMs, warp size, max threads per SM, registers per block, memory clock, bus\n"
    "  width, peak bandwidth, UVA).\n";

static void add_device_json(json *j, int d, const msp_device_props *p) {
  char cc[32];
  snprintf(cc, sizeof cc, "%d.%d", p->compute_major, p->compute_minor);
  json_object(j, NULL);
  json_int(j, "ordinal", d);
  json_string(j, "name", p->name);
  json_string(j, "compute_capability", cc);
  json_int(j, "multiprocessors", p->multiprocessors);
  json_int(j, "warp_size", p->warp_size);
  json_int(j, "max_threads_per_mp", p->max_threads_per_mp);
  json_int(j, "registers_per_block", p->registers_per_block);
  json_int(j, "memory_clock_khz", p->memory_clock_khz);
  json_int(j, "memory_bus_width_bits", p->memory_bus_width_bits);
  json_number(j, "peak_bandwidth_gbs", p->peak_bandwidth_gbs);
  json_bool(j, "uva", p->has_uva);
  json_int(j, "total_memory_bytes", (long long)p->total_memory_bytes);
  json_int(j, "l2_cache_bytes", (long long)p->l2_cache_bytes);
  json_end(j);
}

static void print_device_text(int d, const msp_device_props *p) {
  printf("device %d: %s (compute capability %d.%d)\n", d, p->name, p->compute_major,
         p->compute_minor);
  printf("  multiprocessors      %d\n", p->multiprocessors);
  printf("  warp size            %d\n", p->warp_size);
  printf("  max threads per SM   %d\n", p->max_threads_per_mp);
  printf("  registers per block  %d\n", p->registers_per_block);
  printf("  memory clock         %d kHz\n", p->memory_clock_khz);
  printf("  memory bus width     %d bits\n", p->memory_bus_width_bits);
  printf("  peak bandwidth       %.1f GB/s\n", p->peak_bandwidth_gbs);
  printf("  unified addressing   %s\n", p->has_uva ? "yes" : "no");
  printf("  memory               %.1f GiB, L2 %.1f MiB\n",
         (double)p->total_memory_bytes / (1 << 30), (double)p->l2_cache_bytes / (1 << 20));
}

// Why no device is usable: what a CUDA context says when it cannot be made (no driver, no
// device, the driver's error), as `--backend cuda` would.
static const char *no_device_reason(int built) {
  static char why[512];
  if (!built) return "this build has no CUDA backend";
  msp_context c = NULL;
  if (msp_context_create(MSP_BACKEND_CUDA, 0, &c) == MSP_SUCCESS) {
    msp_context_destroy(&c);
    return "a CUDA context could be made, but no device was counted";
  }
  snprintf(why, sizeof why, "%s", msp_last_error()[0] ? msp_last_error() : "no usable device");
  return why;
}

int cmd_devices(int argc, char **argv) {
  options o;
  options_init(&o);
  int rc = parse_options(argc, argv, OPT_JSON, 0, &o);
  if (rc) return rc;
  if (o.help) {
    fputs(devices_help, stdout);
    return EXIT_OK;
  }
  json *j = NULL;
  int n = 0;
  msp_status st = msp_device_count(&n);
  if (st != MSP_SUCCESS) return fail(st, "device count");
  int built = msp_device_info(0, &(msp_device_props){0}) != MSP_ERR_NOT_BUILT;
  rc = EXIT_FAILED;
  if (o.json) {
    if (!(j = json_new())) {
      fail(MSP_ERR_OUT_OF_MEMORY, "JSON output");
      goto exit;
    }
    json_bool(j, "cuda_built", built);
    json_int(j, "count", n);
    if (n == 0) json_string(j, "reason", no_device_reason(built));
    json_array(j, "devices");
  } else if (n == 0) {
    printf("no CUDA devices (%s)\n", no_device_reason(built));
  }
  for (int d = 0; d < n; d++) {
    msp_device_props p;
    if ((st = msp_device_info(d, &p)) != MSP_SUCCESS) {
      fail(st, "device info");
      goto exit;
    }
    if (j)
      add_device_json(j, d, &p);
    else
      print_device_text(d, &p);
  }
  if (j) {
    json_end(j);
    const int prc = json_finish(j, NULL);
    j = NULL;
    if (prc != EXIT_OK) goto exit;
  }
  rc = EXIT_OK;
exit:
  json_free(j);
  return rc;
}
