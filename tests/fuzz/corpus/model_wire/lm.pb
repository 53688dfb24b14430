
lm"int64*@0€:	embeddingx€€@:transformer_blockˆ€:lm_headx€