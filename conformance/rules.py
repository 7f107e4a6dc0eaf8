"""Stable ids of the spec rules the kernel enforces and the spec-checker reports (one rule set for both).

Each rule quotes the sentence of the operator documentation it comes from. QDQ001-QDQ013 are what the kernel
refuses (and the corpus's invalid cases break); QDQ014 onwards need values or a whole model, so only the
checker (``qdq-conformance check``) reports them; QDQ021-QDQ025 are about the model around the nodes (graph
order, IR version, quantization operators the checker does not know, negative dimensions). Severity:
``error`` (the model breaks the spec), ``warning`` (allowed, but almost certainly not what was meant),
``note`` (something the checker could not determine).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str
    spec: str
    severity: str = "error"


_RULES = [
    Rule("QDQ001", "operator or version unknown",
         "The version is the model's opset import for the node's domain (highest since_version <= it)."),
    Rule("QDQ002", "element type not allowed at this version",
         "Type Constraints: T1 / T2 / T3 ... Allowed types: ..."),
    Rule("QDQ003", "zero point type differs from the output type",
         "`y_zero_point` and `y` must have the same type. / `x_zero_point` and `x` must have the same type."),
    Rule("QDQ004", "output_dtype conflicts with the zero point or is not an allowed type",
         "If both `output_dtype` and `y_zero_point` are specified, `output_dtype` must be `T3`."),
    Rule("QDQ005", "scale shape does not fit any granularity",
         "There are three supported quantization granularities, determined by the shape of `y_scale`."),
    Rule("QDQ006", "zero point shape differs from the scale shape",
         "In all cases, `y_zero_point` must have the same shape as `y_scale`."),
    Rule("QDQ007", "axis out of range",
         "Accepted range is `[-r, r-1]` where `r = rank(input)`."),
    Rule("QDQ008", "block_size out of its valid range",
         "the accepted range is `[ceil(Di/Si), ceil(Di/(Si-1))-1]`"),
    Rule("QDQ009", "attribute not defined at this version",
         "Attributes: the operator version's schema lists every attribute it accepts."),
    Rule("QDQ010", "attribute value not allowed",
         "The block size is a positive integer. / `saturate` ... It is true by default."),
    Rule("QDQ011", "required input missing or too many inputs",
         "Inputs: Between 2 and 3 inputs."),
    Rule("QDQ012", "model is not a single quantization node the kernel can evaluate",
         "qdq_conformance.reference.run evaluates a single-node model."),
    Rule("QDQ013", "output type cannot be determined",
         "If `output_dtype` is not supplied then the output type is the same as `x_scale`."),
    Rule("QDQ014", "scale value is zero or not finite",
         "The quantization formula is `y = saturate((x / y_scale) + y_zero_point)`.", "warning"),
    Rule("QDQ015", "zero point value is not representable in its type",
         "`y_zero_point` and `y` must have the same type."),
    Rule("QDQ016", "float8 / float4 zero point is not zero",
         "`y_zero_point` is usually not used for quantization to float8 types, but the quantization formula "
         "remains the same for consistency", "warning"),
    Rule("QDQ017", "int32 dequantization with a non-zero zero point",
         "In the case of dequantizing `int32`, there's no zero point (zero point is supposed to be 0).",
         "warning"),
    Rule("QDQ018", "saturate set for a target it does not apply to",
         "It only applies for float 8 quantization (float8e4m3fn, float8e4m3fnuz, float8e5m2, "
         "float8e5m2fnuz).",
         "warning"),
    Rule("QDQ019", "declared output type differs from the type the spec gives",
         "`y_zero_point` and `y` must have the same type. / If `output_dtype` is not supplied then the "
         "output type is the same as `x_scale`."),
    Rule("QDQ020", "type, shape or value could not be determined, so a rule was not checked",
         "Types and shapes come from the graph and onnx shape inference where they are not initializers.",
         "note"),
    Rule("QDQ021", "graph is not topologically sorted: a node reads a tensor a later node produces",
         "IR.md: \"The list of nodes defining the top-level computation graph MUST be ordered topologically; "
         "that is, if node K follows node N in the graph, none of the data inputs of N may refer to outputs "
         "of K.\""),
    Rule("QDQ022", "IR version older than the model's opset imports were released with",
         "Versioning.md: each ONNX release pairs an IR version with the ai.onnx / ai.onnx.ml opsets it "
         "defines (onnx.helper.VERSION_TABLE); an opset newer than the IR version's release is unknown to a "
         "runtime that reads only that IR version.", "warning"),
    Rule("QDQ023", "element type does not exist at the model's IR version",
         "onnx.proto, Version: IR 4 added BFLOAT16; IR 9 FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, "
         "FLOAT8E5M2FNUZ; IR 10 UINT4, INT4; IR 11 FLOAT4E2M1; IR 12 FLOAT8E8M0; IR 13 UINT2, INT2; IR 14 "
         "FLOAT6E2M3, FLOAT6E3M2."),
    Rule("QDQ024", "quantization operator the checker does not know, so it was not checked",
         "The checker covers the operators and versions onnx.defs and its catalogue define (qdq-conformance "
         "specs); other com.amd.quark, com.vai.quantize and com.microsoft quantize / dequantize operators "
         "are named, not checked.", "note"),
    Rule("QDQ025", "a declared shape has a negative dimension",
         "IR.md, Static tensor shapes: \"A static tensor shape is a list of records that indicates whether "
         "the tensor is a vector, a matrix, or a higher-dimensional value. For example, a 100x100 matrix has "
         "the shape [100,100].\" A dimension is a size: no tensor has one below 0 (a dimension not known is "
         "a dim_param, or no value at all)."),
]

#: Every rule, by id.
RULES: dict[str, Rule] = {r.id: r for r in _RULES}
