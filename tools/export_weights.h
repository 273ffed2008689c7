/* export_weights.h — `lockstep export RUN --weights FILE`: the restored
 * run's parameters as the model names them.
 *
 * The names are the model's (ls_model_info.tensors; a model without
 * names gives one tensor "params" of shape [n_params]):
 *   FILE.safetensors: an 8-byte little-endian header length N, N bytes of
 *     JSON {"W1":{"dtype":"F32","shape":[784,256],"data_offsets":[0,802816]},
 *     ..., "__metadata__":{"lockstep_run":"3","step":"2345","config_hash":
 *     "<16 hex>","param_hash":"<16 hex>","format":"pt"}} padded with spaces so
 *     the data start at a multiple of 8 bytes (as the reference
 *     implementation pads), then the tensors' binary32 values, little-endian,
 *     in θ order (so the data section is θ itself);
 *   FILE.npy: θ as one flat float32 array, format 1.0, '<f4', shape
 *     (n_params,), written as numpy.save writes it.
 * Either way the values are θ's bits unchanged: their XXH3 (param_hash) is
 * the record's, which the summary line prints.
 */
#ifndef LS_EXPORT_WEIGHTS_H
#define LS_EXPORT_WEIGHTS_H

#include "tools/tools.h"

/* Restores run a->positional[0] of a->db and writes its θ to path (the
 * format follows the name); prints its one line; returns the exit status. */
int export_weights(const cli_args *a, const char *path);

#endif
