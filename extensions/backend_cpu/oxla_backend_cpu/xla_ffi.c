/* oxla's implementation of the XLA FFI C API (xla/ffi/api/c_api.h, compiled against
 * jaxlib's copy of the header) for the cpu backend: the API table handlers call back
 * into, the call frame of one custom call, and the dispatch the machine code calls.
 * See oxla_backend_cpu/xla_ffi.py. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "xla/ffi/api/c_api.h"

struct XLA_FFI_Error {
  XLA_FFI_Error_Code code;
  char* message;
};

static XLA_FFI_Error* make_error(XLA_FFI_Error_Code code, const char* msg) {
  XLA_FFI_Error* e = (XLA_FFI_Error*)malloc(sizeof *e);
  size_t n = msg ? strlen(msg) : 0;
  e->code = code;
  e->message = (char*)malloc(n + 1);
  if (n) memcpy(e->message, msg, n);
  e->message[n] = 0;
  return e;
}

static XLA_FFI_Error* error_create(XLA_FFI_Error_Create_Args* a) {
  return make_error(a->errc, a->message);
}

static void error_get_message(XLA_FFI_Error_GetMessage_Args* a) {
  a->message = a->error->message;
}

static void error_destroy(XLA_FFI_Error_Destroy_Args* a) {
  if (a->error) {
    free(a->error->message);
    free(a->error);
  }
}

static XLA_FFI_Error* unsupported(void* args) {
  (void)args;
  return make_error(XLA_FFI_Error_Code_UNIMPLEMENTED,
                    "this XLA FFI API function is not supported by oxla's cpu backend "
                    "(supported: errors, device ordinal, run id, thread count)");
}

static XLA_FFI_Error* no_stream(XLA_FFI_Stream_Get_Args* a) {
  (void)a;
  return make_error(XLA_FFI_Error_Code_UNIMPLEMENTED,
                    "the cpu backend has no stream (XLA_FFI_Stream_Get)");
}

static XLA_FFI_Error* device_ordinal(XLA_FFI_DeviceOrdinal_Get_Args* a) {
  a->device_ordinal = 0;
  return NULL;
}

static XLA_FFI_Error* run_id(XLA_FFI_RunId_Get_Args* a) {
  a->run_id = 0;
  return NULL;
}

static XLA_FFI_Error* num_threads(XLA_FFI_ThreadPool_NumThreads_Args* a) {
  *a->num_threads = 0; /* no intra-op thread pool is offered to handlers */
  return NULL;
}

static XLA_FFI_Api API = {
    .struct_size = XLA_FFI_Api_STRUCT_SIZE,
    .extension_start = NULL,
    .api_version = {XLA_FFI_Api_Version_STRUCT_SIZE, NULL, XLA_FFI_API_MAJOR,
                    XLA_FFI_API_MINOR},
    .internal_api = NULL,
    .XLA_FFI_Error_Create = error_create,
    .XLA_FFI_Error_GetMessage = error_get_message,
    .XLA_FFI_Error_Destroy = error_destroy,
    .XLA_FFI_Handler_Register = (XLA_FFI_Handler_Register*)unsupported,
    .XLA_FFI_Stream_Get = no_stream,
    .XLA_FFI_Type_Register = (XLA_FFI_Type_Register*)unsupported,
    .XLA_FFI_ExecutionContext_Get = (XLA_FFI_ExecutionContext_Get*)unsupported,
    .XLA_FFI_State_Set = (XLA_FFI_State_Set*)unsupported,
    .XLA_FFI_State_Get = (XLA_FFI_State_Get*)unsupported,
    .XLA_FFI_DeviceMemory_Allocate = (XLA_FFI_DeviceMemory_Allocate*)unsupported,
    .XLA_FFI_DeviceMemory_Free = (XLA_FFI_DeviceMemory_Free*)unsupported,
    .XLA_FFI_ThreadPool_Schedule = (XLA_FFI_ThreadPool_Schedule*)unsupported,
    .XLA_FFI_ThreadPool_NumThreads = num_threads,
    .XLA_FFI_Future_Create = (XLA_FFI_Future_Create*)unsupported,
    .XLA_FFI_Future_SetAvailable = (XLA_FFI_Future_SetAvailable*)unsupported,
    .XLA_FFI_Future_SetError = (XLA_FFI_Future_SetError*)unsupported,
    .XLA_FFI_RunId_Get = run_id,
    .XLA_FFI_DeviceOrdinal_Get = device_ordinal,
};

/* One custom-call site: its handler, its buffers' types and its attributes. */
typedef struct {
  XLA_FFI_Handler* handler;
  int64_t nargs, nrets;
  const int32_t* dtypes;  /* nargs + nrets */
  const int64_t* ranks;   /* nargs + nrets */
  const int64_t* dims;    /* every buffer's dims, concatenated */
  const XLA_FFI_Attrs* attrs;
} oxla_ffi_site;

static _Thread_local char last_error[2048];

const XLA_FFI_Api* oxla_ffi_api(void) { return &API; }

/* The sizes handlers check (XLA_FFI_*_STRUCT_SIZE): attrs, buffer. */
void oxla_ffi_struct_sizes(size_t* out) {
  out[0] = XLA_FFI_Attrs_STRUCT_SIZE;
  out[1] = XLA_FFI_Buffer_STRUCT_SIZE;
}

/* The message of the last failed call on this thread ("" when none), then forgets it. */
const char* oxla_ffi_take_error(void) {
  static _Thread_local char copy[2048];
  memcpy(copy, last_error, sizeof copy);
  last_error[0] = 0;
  return copy;
}

/* Called by the machine code with XLA's cpu convention, the site as "opaque". */
void oxla_ffi_dispatch(void** outputs, const void** inputs, const char* opaque,
                       size_t opaque_len) {
  (void)opaque_len;
  const oxla_ffi_site* s = (const oxla_ffi_site*)opaque;
  int64_t n = s->nargs + s->nrets;
  XLA_FFI_Buffer bufs[n > 0 ? n : 1];
  void* ptrs[n > 0 ? n : 1];
  XLA_FFI_ArgType atypes[s->nargs > 0 ? s->nargs : 1];
  XLA_FFI_RetType rtypes[s->nrets > 0 ? s->nrets : 1];
  const int64_t* d = s->dims;
  for (int64_t i = 0; i < n; i++) {
    bufs[i].struct_size = XLA_FFI_Buffer_STRUCT_SIZE;
    bufs[i].extension_start = NULL;
    bufs[i].dtype = (XLA_FFI_DataType)s->dtypes[i];
    bufs[i].data = i < s->nargs ? (void*)inputs[i] : outputs[i - s->nargs];
    bufs[i].rank = s->ranks[i];
    bufs[i].dims = (int64_t*)d;
    d += s->ranks[i];
    ptrs[i] = &bufs[i];
  }
  for (int64_t i = 0; i < s->nargs; i++) atypes[i] = XLA_FFI_ArgType_BUFFER;
  for (int64_t i = 0; i < s->nrets; i++) rtypes[i] = XLA_FFI_RetType_BUFFER;
  XLA_FFI_CallFrame frame;
  memset(&frame, 0, sizeof frame);
  frame.struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
  frame.api = &API;
  frame.ctx = NULL;
  frame.stage = XLA_FFI_ExecutionStage_EXECUTE;
  frame.args.struct_size = XLA_FFI_Args_STRUCT_SIZE;
  frame.args.size = s->nargs;
  frame.args.types = atypes;
  frame.args.args = ptrs;
  frame.rets.struct_size = XLA_FFI_Rets_STRUCT_SIZE;
  frame.rets.size = s->nrets;
  frame.rets.types = rtypes;
  frame.rets.rets = ptrs + s->nargs;
  frame.attrs = *s->attrs;
  XLA_FFI_Error* err = s->handler(&frame);
  if (err != NULL) {
    if (last_error[0] == 0)
      snprintf(last_error, sizeof last_error, "%s (XLA FFI error code %d)",
               err->message ? err->message : "", (int)err->code);
    free(err->message);
    free(err);
  }
}
